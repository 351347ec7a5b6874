#!/usr/bin/python3
"""bench/peer_summary.py on a synthetic run: llmserve against llama.cpp and against a second
llmserve (llmserve-base), two rounds, the c16 and prefix cells. Checks the per-round ratios,
their median, the hit-rate lines and that cells absent from the run print no row.

  peer_summary_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile


def report(label, gen_tok_s, ttft_p50, hit=0.0, failed=0):
    return {"label": label, "gen_tok_s": gen_tok_s, "ttft_s": {"p50": ttft_p50}, "tpot_s": {"p50": 0.1},
            "prefix_hit_rate": hit, "requests": {"failed": failed, "mismatches": 0}}


def main():
    summary = os.path.join(sys.argv[1], "bench", "peer_summary.py")
    rows = [
        report("llmserve/1/c16", 100.0, 1.0), report("llamacpp/1/c16", 50.0, 2.0),
        report("llmserve/2/c16", 120.0, 1.0), report("llamacpp/2/c16", 40.0, 4.0),
        report("llmserve/1/prefix", 90.0, 0.5, hit=0.9), report("llamacpp/1/prefix", 30.0, 5.0, hit=0.4),
        report("llmserve-base/1/prefix", 45.0, 10.0, failed=1),
        report("llmserve/2/prefix", 80.0, 0.4, hit=0.9), report("llamacpp/2/prefix", 40.0, 2.0, hit=0.5),
        report("llmserve-base/2/prefix", 40.0, 8.0),
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("\n".join(json.dumps(r) for r in rows) + "\n")
    try:
        out = subprocess.run([sys.executable, summary, f.name], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    print(out)
    lines = out.splitlines()
    head_cpp, head_base = lines.index("### llmserve / llama.cpp"), lines.index("### llmserve / llmserve-base")
    cpp, base = lines[head_cpp:head_base], lines[head_base:]
    expect = [  # (table, row prefix, text the row must hold)
        (cpp, "| c16 gen tok/s |", "100 / 50 = 2.00 | 120 / 40 = 3.00 | **2.50** |"),
        (cpp, "| c16 TTFT p50 s |", "= 0.50 | 1 / 4 = 0.25 | **0.38** |"),
        (cpp, "| prefix TTFT p50 s |", "0.5 / 5 = 0.10 | 0.4 / 2 = 0.20 | **0.15** |"),
        (cpp, "| prefix gen tok/s |", "= 3.00 | 80 / 40 = 2.00 | **2.50** |"),
        (base, "| prefix TTFT p50 s |", "0.5 / 10 = 0.05 | 0.4 / 8 = 0.05 | **0.05** |"),
        (base, "| prefix gen tok/s |", "90 / 45 = 2.00 | 80 / 40 = 2.00 | **2.00** |"),
    ]
    errors = []
    for table, row, text in expect:
        got = [x for x in table if x.startswith(row)]
        if len(got) != 1 or text not in got[0]:
            errors.append(f"row {row!r}: want {text!r}, got {got}")
    if any(x.startswith("| c16") for x in base):
        errors.append("llmserve-base had no c16 cell, but its table has a c16 row")
    if any(x.startswith(("| c8", "| chat4", "| prefill")) for x in lines):
        errors.append("a cell absent from the run got a row")
    for want in ("prefix prefix-cache hit rate, llmserve: 90.0%, 90.0%",
                 "prefix prefix-cache hit rate, llama.cpp: 40.0%, 50.0%",
                 "llmserve-base: 1 failed, 0 mismatched requests"):
        if want not in lines:
            errors.append(f"missing line {want!r}")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
