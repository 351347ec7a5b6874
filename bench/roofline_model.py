#!/usr/bin/python3
"""The serving workload's ceiling on a machine, from its roofline figures, and issue 8's
targets scaled to this machine by the ratio of the two machines' ceilings.

    roofline_model.py ROOFLINE_JSON_LINES_FILE [--requests 32] [--input-len 128] [--output-len 128]

The file holds one or more JSON lines from ../shared/tools/roofline (e.g. the start and end
of a serving run); each figure is the best (highest) over them, or with --stat median the
median. The best is the default: on this shared machine a roofline run reads low whenever a
neighbour is busy (GEMM from 245 to 450 GFLOP/s, bandwidth from 25 to 51 GB/s within an
hour), and a low ceiling would make the scaled targets easy. The model, per benchmark model
(scripts/gen_bench_models.py) and weight dtype:
  - P = the linear layers' parameters (Q|K|V, O, gate|up, down per layer, plus the
    vocabulary head); a decode step reads P × dtype bytes of weights and does 2·P FLOPs
    per row; a prompt does 2·P FLOPs per token (the head only for its last token).
  - Prefill time = prompt FLOPs ÷ gemm_m512 (compute-bound).
  - Closed loop at concurrency C: requests/C waves of output-len decode steps of C rows,
    each max(weight bytes ÷ read bandwidth, C·2·P ÷ gemm_m512) — whichever bound binds.
  - Ceiling tok/s = generated tokens ÷ (prefill + decode time). Batch-1 decode ceiling =
    read bandwidth ÷ weight bytes. 512-token prefill ceiling = gemm ÷ FLOPs per token.
Attention, KV reads, sampling, the ramp of each wave and the overlap of prefill with decode
are left out, so a real engine stays below the ceiling. Issue 8's machine: 48 GB/s read,
955 GFLOP/s bf16 GEMM; a target scaled to this machine = target × (ceiling here ÷ ceiling
there), i.e. the same fraction of the same workload's ceiling, where "here" uses each
figure capped at the issue machine's (targets only scale down). TTFT targets scale by the
GEMM ratio (prompt processing is compute-bound).
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISSUE_MACHINE = {"read_bandwidth_gbs": 48.0, "gemm_m512_bf16_gflops": 955.0}
# (model, concurrency or "prefill512"/"batch1") -> issue 8's target (tok/s), bf16 weights.
TARGETS = {("1b", 16): 170.0, ("1b", 8): 120.0, ("1b", "batch1"): 20.0, ("1b", "prefill512"): 310.0,
           ("small", 16): 850.0}
TTFT_TARGETS = {16: 3.9, 8: 1.85}  # seconds, 1b bf16


def load_specs():
    spec = importlib.util.spec_from_file_location("gen_bench_models", os.path.join(REPO, "scripts", "gen_bench_models.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.dont_write_bytecode = True
    spec.loader.exec_module(mod)
    return mod.MODELS


def linear_params(s):
    head_dim = s.hidden_size // s.num_heads
    kv = s.num_kv_heads * head_dim
    per_layer = s.hidden_size * (s.hidden_size + 2 * kv) + s.hidden_size * s.hidden_size + 3 * s.hidden_size * s.ffn_dim
    return s.num_layers * per_layer, s.vocab_size * s.hidden_size  # (layers, head)


def ceilings(spec, dtype, machine, requests, input_len, output_len, concurrencies):
    layers, head = linear_params(spec)
    p = layers + head
    wbytes = p * (2 if dtype == "bf16" else 4)
    gemm = machine[f"gemm_m512_{dtype}_gflops"] * 1e9
    bw = machine["read_bandwidth_gbs"] * 1e9
    prompt_flops = requests * (input_len * 2 * layers + 2 * head)
    out = {"batch1": bw / wbytes, "prefill512": gemm / ((512 * 2 * layers + 2 * head) / 512)}
    for c in concurrencies:
        step = max(wbytes / bw, c * 2 * p / gemm)
        decode = (requests / c) * output_len * step
        out[c] = requests * output_len / (prompt_flops / gemm + decode)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roofline")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--stat", choices=("max", "median"), default="max",
                    help="how to combine several roofline runs (default max: the strictest targets)")
    ap.add_argument("--json", help="also write the table as JSON here")
    a = ap.parse_args()
    runs = [json.loads(l) for l in open(a.roofline) if l.strip().startswith("{")]
    if not runs:
        sys.exit(f"roofline_model: no roofline JSON lines in {a.roofline}")
    combine = max if a.stat == "max" else statistics.median
    here = {k: combine(r[k] for r in runs) for k in runs[0] if k != "threads"}
    specs = load_specs()
    conc = [1, 8, 16, 32]
    print(f"machine ({a.stat} of {len(runs)} roofline runs): read {here['read_bandwidth_gbs']:.1f} GB/s, "
          f"gemm bf16 {here['gemm_m512_bf16_gflops']:.0f} / f32 {here['gemm_m512_f32_gflops']:.0f} GFLOP/s; "
          f"issue 8's machine: 48 GB/s, 955 GFLOP/s bf16")
    print("| model | dtype | workload | ceiling here (tok/s) | ceiling on issue 8's machine | issue target | "
          "target scaled here |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for name in ("small", "1b"):
        for dtype in ("bf16", "f32"):
            ours = ceilings(specs[name], dtype, here, a.requests, a.input_len, a.output_len, conc)
            theirs = ceilings(specs[name], dtype, ISSUE_MACHINE, a.requests, a.input_len, a.output_len,
                              conc) if dtype == "bf16" else {}
            # Targets scale down only where this machine is slower (the issue's rule): each
            # figure is capped at the issue machine's before the ratio is taken.
            capped = ceilings(specs[name], dtype, {k: min(v, ISSUE_MACHINE.get(k, v)) for k, v in here.items()},
                              a.requests, a.input_len, a.output_len, conc) if dtype == "bf16" else {}
            for w in ["batch1", "prefill512"] + conc:
                target = TARGETS.get((name, w)) if dtype == "bf16" else None
                scaled = target * capped[w] / theirs[w] if target else None
                label = f"c{w}" if isinstance(w, int) else w
                rows.append({"model": name, "dtype": dtype, "workload": label, "ceiling": ours[w],
                             "issue_ceiling": theirs.get(w), "target": target, "scaled_target": scaled})
                cells = [name, dtype, label, f"{ours[w]:.1f}", f"{theirs[w]:.1f}" if w in theirs else "–",
                         f"{target:.0f}" if target else "–", f"{scaled:.1f}" if scaled else "–"]
                print("| " + " | ".join(cells) + " |")
    # TTFT is prompt processing: compute-bound, so its targets scale with the GEMM ratio.
    gemm_ratio = max(1.0, ISSUE_MACHINE["gemm_m512_bf16_gflops"] / here["gemm_m512_bf16_gflops"])
    ttft = {f"c{c}": t * gemm_ratio for c, t in TTFT_TARGETS.items()}
    print("TTFT p50 targets (1b bf16) scaled by the GEMM ratio (x%.2f): " % gemm_ratio +
          ", ".join(f"{k} {TTFT_TARGETS[int(k[1:])]:.2f} s -> {v:.2f} s" for k, v in ttft.items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": here, "rows": rows, "ttft_targets_scaled": ttft}, f, indent=1)


if __name__ == "__main__":
    main()
