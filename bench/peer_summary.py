#!/usr/bin/python3
"""Summarizes bench/run_peer_bench.sh's llmbench reports (one JSON line each, labelled
SERVER/ROUND/CELL): per cell and round the ratio of llmserve to each other server
(llamacpp, and llmserve-base when the run had one), and the median over rounds.

  bench/peer_summary.py RESULTS.jsonl

Cells: c16, c8 generated tok/s; c16 TTFT p50; c1 decode tok/s (1 / TPOT p50); prefill
time (TTFT p50 of the prefill cell); prefix and chat4 TTFT p50 and generated tok/s; json16
(JSON-Schema-constrained c16) generated tok/s. Then
each server's prefix-cache hit rate (cached / prompt tokens) in the prefix and chat4 cells,
and the failed and mismatched requests per server.
"""
import json
import statistics
import sys

METRICS = [  # (name, cell, value of a report)
    ("c16 gen tok/s", "c16", lambda r: r["gen_tok_s"]),
    ("c16 TTFT p50 s", "c16", lambda r: r["ttft_s"]["p50"]),
    ("c8 gen tok/s", "c8", lambda r: r["gen_tok_s"]),
    ("c1 decode tok/s", "c1", lambda r: 1.0 / r["tpot_s"]["p50"] if r["tpot_s"]["p50"] else 0.0),
    ("prefill time s", "prefill", lambda r: r["ttft_s"]["p50"]),
    ("prefix TTFT p50 s", "prefix", lambda r: r["ttft_s"]["p50"]),
    ("prefix gen tok/s", "prefix", lambda r: r["gen_tok_s"]),
    ("chat4 TTFT p50 s", "chat4", lambda r: r["ttft_s"]["p50"]),
    ("chat4 gen tok/s", "chat4", lambda r: r["gen_tok_s"]),
    ("json16 gen tok/s", "json16", lambda r: r["gen_tok_s"]),
]
CACHE_CELLS = ("prefix", "chat4")
NAMES = {"llamacpp": "llama.cpp"}


def ratio_table(by, rounds, other):
    print(f"### llmserve / {NAMES.get(other, other)}")
    print("| cell | " + " | ".join(f"round {x}: llmserve / {NAMES.get(other, other)} = ratio" for x in rounds)
          + " | median ratio |")
    print("|---|" + "---|" * (len(rounds) + 1))
    for name, cell, value in METRICS:
        cells, ratios = [], []
        for x in rounds:
            a, b = by.get(("llmserve", x, cell)), by.get((other, x, cell))
            if a is None or b is None:
                cells.append("-")
                continue
            va, vb = value(a), value(b)
            ratio = va / vb if vb else float("nan")
            ratios.append(ratio)
            cells.append(f"{va:.3g} / {vb:.3g} = {ratio:.2f}")
        if not ratios:
            continue  # a cell this run did not have
        print(f"| {name} | " + " | ".join(cells) + f" | **{statistics.median(ratios):.2f}** |")


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
    servers = sorted({k[0] for k in by})
    for other in (s for s in ("llamacpp", "llmserve-base") if s in servers):
        ratio_table(by, rounds, other)
    for cell in CACHE_CELLS:
        for server in servers:
            rates = [by[(server, x, cell)].get("prefix_hit_rate", 0.0) for x in rounds if (server, x, cell) in by]
            if rates:
                print(f"{cell} prefix-cache hit rate, {NAMES.get(server, server)}: "
                      + ", ".join(f"{100 * h:.1f}%" for h in rates))
    for server, (failed, mismatched) in sorted(problems.items()):
        print(f"{server}: {failed} failed, {mismatched} mismatched requests")


if __name__ == "__main__":
    main()
