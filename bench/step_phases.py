#!/usr/bin/python3
"""Where a serving run's engine time went, from llmserve's own Prometheus metrics.

    step_phases.py snap URL OUT.json              # save the step counters now
    step_phases.py report BEFORE.json AFTER.json WALL_SECONDS [--label L] [--jsonl F]

`snap` reads URL (llmserve's /metrics) and keeps, per phase (schedule, forward, sample,
emit), the sum and count of llmserve_engine_step_duration_seconds, plus the sum and count
of llmserve_iteration_tokens (tokens per step). `report` subtracts two snapshots and prints
each phase's seconds and share of the run's wall time, the engine's idle time (wall minus
all phases: waiting for work, or the gRPC side), the steps, the mean step and the mean
tokens per step. The metric prefix is taken as whatever precedes "engine_step_duration".
"""
import json
import re
import sys
import urllib.request

PHASES = ("schedule", "forward", "sample", "emit")
LINE = re.compile(r'^(\w*?)(engine_step_duration_seconds|iteration_tokens)_(sum|count)\{([^}]*)\}\s+(\S+)$')


def snap(url, out):
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    vals = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        _, family, kind, labels, value = m.groups()
        phase = re.search(r'phase="(\w+)"', labels)
        key = f"{phase.group(1) if phase else 'tokens'}_{kind}"
        if family == "iteration_tokens":
            key = f"tokens_{kind}"
        vals[key] = vals.get(key, 0.0) + float(value)
    missing = [p for p in PHASES if f"{p}_sum" not in vals]
    if missing or "tokens_sum" not in vals:
        sys.exit(f"step_phases: {url} has no engine_step_duration_seconds / iteration_tokens for {missing or 'tokens'}")
    with open(out, "w") as f:
        json.dump(vals, f)


def report(before, after, wall, label, jsonl):
    a = json.load(open(before))
    b = json.load(open(after))
    d = {k: b[k] - a.get(k, 0.0) for k in b}
    steps = d["forward_count"]
    busy = sum(d[f"{p}_sum"] for p in PHASES)
    row = {"label": label, "wall_s": wall, "steps": int(steps), "busy_s": busy, "idle_s": wall - busy,
           "mean_step_ms": 1e3 * busy / steps if steps else 0.0,
           "tokens_per_step": d["tokens_sum"] / steps if steps else 0.0}
    parts = []
    for p in PHASES:
        row[f"{p}_s"] = d[f"{p}_sum"]
        parts.append(f"{p} {d[f'{p}_sum']:.2f} s ({100 * d[f'{p}_sum'] / wall:.1f}%)")
    parts.append(f"idle {wall - busy:.2f} s ({100 * (wall - busy) / wall:.1f}%)")
    print(f"engine phases over {wall:.2f} s: " + ", ".join(parts))
    print(f"engine steps: {int(steps)}, mean {row['mean_step_ms']:.1f} ms, {row['tokens_per_step']:.1f} tokens/step")
    if jsonl:
        with open(jsonl, "a") as f:
            f.write(json.dumps(row) + "\n")


def main(argv):
    if len(argv) == 4 and argv[1] == "snap":
        return snap(argv[2], argv[3])
    if len(argv) >= 5 and argv[1] == "report":
        label, jsonl = "", ""
        rest = argv[5:]
        while rest:
            if rest[0] == "--label" and len(rest) > 1:
                label, rest = rest[1], rest[2:]
            elif rest[0] == "--jsonl" and len(rest) > 1:
                jsonl, rest = rest[1], rest[2:]
            else:
                sys.exit(f"step_phases: unknown argument {rest[0]}")
        return report(argv[2], argv[3], float(argv[4]), label, jsonl)
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
