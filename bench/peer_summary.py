#!/usr/bin/python3
"""Summarizes bench/run_peer_bench.sh's llmbench reports (one JSON line each, labelled
SERVER/ROUND/CELL): per cell and round the llmserve / llama.cpp ratio, and the median.

  bench/peer_summary.py RESULTS.jsonl

Cells: c16, c8 generated tok/s; c16 TTFT p50; c1 decode tok/s (1 / TPOT p50); prefill
time (TTFT p50 of the prefill cell). Failed and mismatched requests are listed per server.
"""
import json
import statistics
import sys

METRICS = [  # (name, cell, value of a report, higher is better)
    ("c16 gen tok/s", "c16", lambda r: r["gen_tok_s"], True),
    ("c16 TTFT p50 s", "c16", lambda r: r["ttft_s"]["p50"], False),
    ("c8 gen tok/s", "c8", lambda r: r["gen_tok_s"], True),
    ("c1 decode tok/s", "c1", lambda r: 1.0 / r["tpot_s"]["p50"] if r["tpot_s"]["p50"] else 0.0, True),
    ("prefill time s", "prefill", lambda r: r["ttft_s"]["p50"], False),
]


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    by = {}
    problems = {}
    for r in rows:
        server, rnd, cell = r["label"].split("/")
        by[(server, rnd, cell)] = r
        q = r["requests"]
        problems.setdefault(server, [0, 0])
        problems[server][0] += q["failed"]
        problems[server][1] += q["mismatches"]
    rounds = sorted({k[1] for k in by}, key=int)
    print("| cell | " + " | ".join(f"round {x}: llmserve / llama.cpp = ratio" for x in rounds) + " | median ratio |")
    print("|---|" + "---|" * (len(rounds) + 1))
    for name, cell, value, _ in METRICS:
        cells, ratios = [], []
        for x in rounds:
            a, b = by.get(("llmserve", x, cell)), by.get(("llamacpp", x, cell))
            if a is None or b is None:
                cells.append("-")
                continue
            va, vb = value(a), value(b)
            ratio = va / vb if vb else float("nan")
            ratios.append(ratio)
            cells.append(f"{va:.3g} / {vb:.3g} = {ratio:.2f}")
        med = f"{statistics.median(ratios):.2f}" if ratios else "-"
        print(f"| {name} | " + " | ".join(cells) + f" | **{med}** |")
    for server, (failed, mismatched) in sorted(problems.items()):
        print(f"{server}: {failed} failed, {mismatched} mismatched requests")


if __name__ == "__main__":
    main()
