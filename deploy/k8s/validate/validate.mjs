// Validates Kubernetes objects offline against the API schemas (kubernetes-models) and the
// Prometheus Operator CRDs (@kubernetes-models/prometheus-operator).
// Usage: node validate.mjs FILE.yaml...   ("-" = stdin; multi-document YAML)
// Prints one line per object; exits 1 if any object is invalid or of an unknown kind.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

// apiVersion → the module that exports its kinds as classes.
function moduleFor(apiVersion) {
  if (apiVersion.startsWith("monitoring.coreos.com/")) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  }
  return `kubernetes-models/${apiVersion}`;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node validate.mjs FILE.yaml... (- = stdin)");
  process.exit(2);
}
let objects = 0;
let failures = 0;
for (const file of files) {
  const text = readFileSync(file === "-" ? 0 : file, "utf8");
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) {
      console.error(`${file}: YAML error: ${doc.errors[0].message}`);
      failures++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    objects++;
    const what = `${file}: ${obj.apiVersion}/${obj.kind} ${obj.metadata?.name ?? "?"}`;
    let mod;
    try {
      mod = await import(moduleFor(String(obj.apiVersion)));
    } catch (e) {
      console.error(`${what}: FAIL: unknown apiVersion (${e.code ?? e.message})`);
      failures++;
      continue;
    }
    const Model = mod[obj.kind];
    if (typeof Model !== "function") {
      console.error(`${what}: FAIL: unknown kind`);
      failures++;
      continue;
    }
    try {
      new Model(obj).validate();
      console.log(`${what}: ok`);
    } catch (e) {
      console.error(`${what}: FAIL: ${e.message}`);
      failures++;
    }
  }
}
console.log(`k8s-validate: ${objects} objects, ${failures} invalid`);
process.exit(failures > 0 || objects === 0 ? 1 : 0);
