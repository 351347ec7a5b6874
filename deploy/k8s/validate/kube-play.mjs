// Turns the rendered manifests (kubectl kustomize deploy/k8s) into what `podman kube play`
// can run on one machine with no cluster: the ConfigMap, and the Deployment split into N
// single-replica Deployments on the host network with distinct ports (no published ports),
// the model PVC replaced by a read-only hostPath, the image set, and $(VAR) references in
// args resolved from the ConfigMap (as the kubelet does). gRPC probes and preStop hooks
// are dropped: podman does not run them; the caller checks health with `llmctl health`.
// Usage: node kube-play.mjs RENDERED.yaml IMAGE MODELS_DIR MODEL TOKENIZER PORT:METRICS:HTTP...
import { readFileSync } from "node:fs";
import { parseAllDocuments, stringify } from "yaml";

const [file, image, modelsDir, model, tokenizer, ...portPairs] = process.argv.slice(2);
if (!file || !image || !modelsDir || portPairs.length === 0) {
  console.error("usage: node kube-play.mjs RENDERED.yaml IMAGE MODELS_DIR MODEL TOKENIZER PORT:METRICS:HTTP...");
  process.exit(2);
}
const docs = parseAllDocuments(readFileSync(file === "-" ? 0 : file, "utf8")).map((d) => d.toJS());
const configMap = docs.find((d) => d?.kind === "ConfigMap" && d.metadata.name === "llmserve-flags");
const deployment = docs.find((d) => d?.kind === "Deployment" && d.metadata.name === "llmserve");
if (!configMap || !deployment) {
  console.error("kube-play: no ConfigMap llmserve-flags or Deployment llmserve in the input");
  process.exit(1);
}
// The test model and a small footprint for a shared 2-core machine.
Object.assign(configMap.data, {
  LLMSERVE_MODEL: model,
  LLMSERVE_TOKENIZER: tokenizer,
  LLMSERVE_THREADS: "1",
  LLMSERVE_KV_CACHE_BYTES: "64M",
  LLMSERVE_DRAIN_TIMEOUT: "10",
});

const out = [configMap];
portPairs.forEach((pair, i) => {
  const [port, metricsPort, httpPort] = pair.split(":");
  const d = structuredClone(deployment);
  const suffix = String.fromCharCode("a".charCodeAt(0) + i);
  d.metadata.name = `llmserve-${suffix}`;
  d.spec.replicas = 1;
  d.spec.selector.matchLabels["llmserve.test/replica"] = suffix;
  d.spec.template.metadata.labels["llmserve.test/replica"] = suffix;
  const pod = d.spec.template.spec;
  pod.hostNetwork = true;
  pod.volumes = [{ name: "models", hostPath: { path: modelsDir, type: "Directory" } }];
  const c = pod.containers[0];
  c.image = image;
  c.imagePullPolicy = "Never";
  delete c.ports;
  delete c.startupProbe;
  delete c.readinessProbe;
  delete c.livenessProbe;
  delete c.lifecycle;
  c.resources = { requests: { cpu: "500m", memory: "256Mi" }, limits: { cpu: "1", memory: "1Gi" } };
  c.env = [{ name: "LLMSERVE_ADDR", value: `127.0.0.1:${port}` }];
  c.args = c.args
    .map((a) => a.replace(/\$\(([A-Z0-9_]+)\)/g, (_, v) => configMap.data[v] ?? ""))
    .map((a) => (a.startsWith("--port=") ? `--port=${port}` : a))
    .map((a) => (a.startsWith("--metrics-port=") ? `--metrics-port=${metricsPort}` : a))
    .map((a) => (a.startsWith("--http-port=") ? `--http-port=${httpPort}` : a));
  c.args.push("--host=127.0.0.1");
  out.push(d);
});
process.stdout.write(out.map((o) => stringify(o)).join("---\n"));
