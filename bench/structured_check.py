#!/usr/bin/env python3
"""Structured outputs against a running server, the issue's generation check.

Takes MaskBench files (schemas), asks the server's OpenAI-compatible /v1/completions for
output constrained by each schema (response_format json_schema), greedy and with a seed,
first with CONCURRENCY requests in flight and then each request alone, and checks:
  - every finished output (finish_reason "stop") parses as JSON and validates against its
    schema (python3-jsonschema);
  - each output is the same batched and alone.
Schemas the server refuses (400: a keyword we do not support) are counted, not failed.

  structured_check.py --url http://127.0.0.1:8000 --dir ../shared/golden/maskbench/data \
      --schemas 300 --concurrency 16 --max-tokens 256
Exit status 1 if any check fails. Uses only the standard library and python3-jsonschema
(run it with /usr/bin/python3 on Debian).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import sys
import urllib.error
import urllib.request

import jsonschema


def post(url, body, timeout):
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def request_body(schema, seed, max_tokens, model):
    body = {
        "prompt": "Here is the JSON you asked for:\n",
        "max_tokens": max_tokens,
        "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}},
    }
    if model:
        body["model"] = model
    if seed is None:
        body["temperature"] = 0
    else:
        body["temperature"] = 1.0
        body["seed"] = seed
    return body


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--dir", required=True, help="directory of MaskBench files")
    ap.add_argument("--schemas", type=int, default=300, help="how many schemas (that the server accepts)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--model", default="")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()

    files = sorted(glob.glob(os.path.join(args.dir, "*.json")))
    jobs = []  # (file, schema, seed)
    refused = 0
    for f in files:
        if len(jobs) >= 2 * args.schemas:
            break
        with open(f) as fh:
            schema = json.load(fh)["schema"]
        status, resp = post(args.url, request_body(schema, None, 1, args.model), args.timeout)
        if status == 400:
            refused += 1
            continue
        if status != 200:
            print(f"{os.path.basename(f)}: HTTP {status}: {resp}")
            return 1
        for seed in (None, 1000 + len(jobs)):
            jobs.append((f, schema, seed))

    def run(job):
        f, schema, seed = job
        status, resp = post(args.url, request_body(schema, seed, args.max_tokens, args.model), args.timeout)
        if status != 200:
            return (status, None, None)
        choice = resp["choices"][0]
        return (status, choice["text"], choice["finish_reason"])

    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        batched = list(pool.map(run, jobs))
    alone = [run(j) for j in jobs]

    failures = 0
    finished = length = 0
    for (f, schema, seed), b, a in zip(jobs, batched, alone):
        name = f"{os.path.basename(f)} ({'greedy' if seed is None else f'seed {seed}'})"
        if b[0] != 200:
            print(f"FAIL {name}: HTTP {b[0]}")
            failures += 1
            continue
        if b[1:] != a[1:]:
            print(f"FAIL {name}: batched and alone differ:\n  {b[1][:200]!r}\n  {a[1][:200]!r}")
            failures += 1
        if b[2] == "length":
            length += 1
            continue
        finished += 1
        try:
            jsonschema.validate(json.loads(b[1]), schema)
        except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError) as e:
            print(f"FAIL {name}: output does not validate: {str(e)[:300]}\n  {b[1][:300]!r}")
            failures += 1
    print(f"schemas: {len(jobs) // 2} accepted, {refused} refused (400); requests: {len(jobs)}, "
          f"finished {finished}, cut by max_tokens {length}; failures {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
