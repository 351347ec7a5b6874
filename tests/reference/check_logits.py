#!/usr/bin/python3
"""Compares llmrun's logits and greedy ids with the independent numpy reference.

For each case (Llama with GQA and llama3 RoPE scaling, Qwen2 with QKV biases, Mistral
with MQA, GPT-2, a tied-embedding Llama with linear RoPE scaling, Qwen3 with q/k norms and
a head_dim other than hidden/heads, Phi-3 with fused weights, LongRoPE, partial rotary and
a sliding window, Mistral with a small sliding window, Qwen2 with a window from
max_window_layers on) this writes small random-weight checkpoints -- an HF directory in
F32 (and BF16) and the same weights as GGUF F32/F16/BF16 -- runs

  llmrun --model M --prompts-file F --max-tokens 8 --top-logits V --weight-dtype f32 --kv-dtype f32

and checks, per prompt:
  * prompt_ids == BOS + the prompt's UTF-8 bytes (the byte-level tokenizer);
  * all V logits at the last prompt position within 1e-3 (max abs) of the reference
    computed in float64 on the same weights as the file stores them (rounded to
    f16/bf16 where the file does), and loosely close to the f32 reference;
  * generated_ids == the reference's greedy continuation, except that a divergence is
    allowed from a step where the reference's top two logits are within 1e-3;
  * text == the decoded bytes, when they are valid UTF-8 without special tokens.

Exit status: 0 all pass, 1 some check failed, 2 usage/setup error, 77 no --llmrun given.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoints as ckpt  # noqa: E402
import formats  # noqa: E402
from reference_model import ReferenceModel  # noqa: E402

TOL = 1e-3           # max abs logit difference against the same-weights reference
NEAR_TIE = 1e-3      # greedy may diverge only where the reference's top-2 gap is below this
LOOSE = {"f16": 0.05, "bf16": 0.3}  # max abs difference to the f32 reference, rounded weights
MAX_TOKENS = 8

PROMPTS = [
    "Hello",
    "",
    "The quick brown fox jumps over the lazy dog.\nSecond line: caf\u00e9, na\u00efve, \u2014 42!",
    "Once upon a time, in a land far away, there lived a small robot who counted every "
    "grain of sand on the beach, one by one.",
]

LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 256}

# Phi-3's LongRoPE factors for rope_dim 18 (9 pairs); dyadic, so float32 holds them exactly.
PHI3_LONGROPE = {"type": "longrope", "short_factor": [1.0, 1.0, 1.125, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0],
                 "long_factor": [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0]}

# (spec, seed, HF shard size in bytes or None[, False: HF files only])
CASES = [
    (ckpt.ModelSpec("llama_gqa_llama3", "llama", hidden_size=64, num_layers=4, num_heads=8, num_kv_heads=2,
                    ffn_dim=160, vocab_size=300, context_length=512, norm_eps=1e-5, rope_theta=500000.0,
                    rope_scaling=LLAMA3), 11, None),
    (ckpt.ModelSpec("qwen2_bias", "qwen2", hidden_size=64, num_layers=3, num_heads=4, num_kv_heads=2,
                    ffn_dim=128, vocab_size=300, context_length=512, norm_eps=1e-6, rope_theta=1000000.0),
     12, 120000),
    (ckpt.ModelSpec("mistral_mqa", "mistral", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=1,
                    ffn_dim=192, vocab_size=300, context_length=512, norm_eps=1e-5, rope_theta=1000000.0),
     13, None),
    (ckpt.ModelSpec("gpt2", "gpt2", hidden_size=64, num_layers=3, num_heads=4, num_kv_heads=4, ffn_dim=256,
                    vocab_size=300, context_length=160, norm_eps=1e-5, tied=True), 14, None),
    (ckpt.ModelSpec("llama_tied_linear", "llama", hidden_size=96, num_layers=2, num_heads=6, num_kv_heads=3,
                    ffn_dim=256, vocab_size=300, context_length=512, norm_eps=1e-5, rope_theta=10000.0,
                    rope_scaling={"rope_type": "linear", "type": "linear", "factor": 2.0}, tied=True), 15, None),
    (ckpt.ModelSpec("qwen3_qk_norm", "qwen3", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2,
                    ffn_dim=128, vocab_size=300, context_length=512, norm_eps=1e-6, rope_theta=1000000.0,
                    tied=True, head_dim_override=32), 16, None),
    # Long factors from position 64 on (the 121-token prompt crosses it); window 40.
    (ckpt.ModelSpec("phi3_longrope_swa", "phi3", hidden_size=96, num_layers=2, num_heads=4, num_kv_heads=2,
                    ffn_dim=160, vocab_size=300, context_length=256, norm_eps=1e-5, rope_theta=10000.0,
                    rope_scaling=PHI3_LONGROPE, partial_rotary_factor=0.75, original_context=64,
                    sliding_window=40), 17, None),
    (ckpt.ModelSpec("mistral_swa12", "mistral", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2,
                    ffn_dim=128, vocab_size=300, context_length=512, norm_eps=1e-5, rope_theta=10000.0,
                    sliding_window=12), 18, None),
    # Layer 0 full, layers 1-2 windowed (HF only: GGUF has no per-layer windows for qwen2).
    (ckpt.ModelSpec("qwen2_swa_layers", "qwen2", hidden_size=64, num_layers=3, num_heads=4, num_kv_heads=2,
                    ffn_dim=128, vocab_size=300, context_length=512, norm_eps=1e-6, rope_theta=10000.0,
                    sliding_window=10, max_window_layers=1), 19, None, False),
]


class Variant:
    """One file to run: its path, the weights the reference uses, extra llmrun flags."""

    def __init__(self, name, path, weights, rounding, flags=()):
        self.name, self.path, self.weights, self.rounding, self.flags = name, path, weights, rounding, list(flags)


def write_case(spec, seed, shard_bytes, workdir, gguf=True):
    """Writes every file of one case; returns the variants and the f32 weights."""
    w = ckpt.random_weights(spec, seed)
    d = os.path.join(workdir, spec.name)
    os.makedirs(d, exist_ok=True)
    tok = ckpt.byte_tokenizer_json(spec)
    tok_kvs = ckpt.byte_tokenizer_gguf_kvs(spec)
    hf32, hf16 = os.path.join(d, "hf-f32"), os.path.join(d, "hf-bf16")
    ckpt.write_hf_dir(hf32, spec, w.__getitem__, "f32", shard_bytes=shard_bytes, tokenizer_json=tok)
    ckpt.write_hf_dir(hf16, spec, w.__getitem__, "bf16", tokenizer_json=tok)
    variants = [Variant("hf-f32", hf32, w, "f32"),
                Variant("hf-f32-batch", hf32, w, "f32", ["--batch", "--prefill-chunk", "7", "--block-size", "8"]),
                Variant("hf-bf16", hf16, {n: formats.round_to(a, "bf16") for n, a in w.items()}, "bf16")]
    if spec.sliding_window:  # the window again across blocks of 16 and chunks of 5
        variants.append(Variant("hf-f32-batch16", hf32, w, "f32",
                                ["--batch", "--prefill-chunk", "5", "--block-size", "16"]))
    for dt in formats.DTYPES if gguf else ():
        path = os.path.join(d, "model-%s.gguf" % dt)
        ckpt.write_gguf(path, spec, w.__getitem__, dt, tok_kvs)
        variants.append(Variant("gguf-" + dt, path, ckpt.gguf_rounded(spec, w, dt), dt))
    return variants, w


def run_llmrun(llmrun, variant, prompts_file, vocab):
    cmd = [llmrun, "--model", variant.path, "--prompts-file", prompts_file, "--max-tokens", str(MAX_TOKENS),
           "--top-logits", str(vocab), "--weight-dtype", "f32", "--kv-dtype", "f32"] + variant.flags
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "timed out: " + " ".join(cmd)
    if p.returncode != 0:
        return None, "exit %d: %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode("utf-8", "replace")[-2000:])
    lines = [ln for ln in p.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    try:
        rows = [json.loads(ln) for ln in lines]
    except ValueError as e:
        return None, "unparsable output (%s): %s" % (e, lines[:3])
    if len(rows) != len(PROMPTS):
        return None, "%d output lines for %d prompts" % (len(rows), len(PROMPTS))
    return rows, None


def expected_text(spec, ids):
    """The decoded text of generated ids, or None when it is not checkable."""
    pieces = ckpt.byte_vocab(spec)
    if ids and ids[-1] == spec.eos_id:
        ids = ids[:-1]
    out = b""
    for i in ids:
        if i in (spec.bos_id, spec.eos_id):
            return None
        out += bytes([i]) if i < 256 else pieces[i].encode("utf-8")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def compare_ids(ours, ref, gaps, eos):
    """None when `ours` is an acceptable greedy continuation, else a message."""
    for k, r in enumerate(ref):
        if k >= len(ours):
            if r == eos and k == len(ref) - 1:
                return None  # llmrun does not list the EOS it stopped at
            return "stopped after %d tokens; reference continues with %s" % (len(ours), ref[k:])
        if ours[k] != r:
            if gaps[k] < NEAR_TIE:
                return None  # a near-tie: either choice is right, later ids may differ
            return "step %d: got %d, reference %d (top-2 gap %.3g); ours %s ref %s" % (k, ours[k], r, gaps[k], ours,
                                                                                      ref)
    if len(ours) > len(ref):
        return "continued past the reference's end (EOS): ours %s ref %s" % (ours, ref)
    return None


def logits_vector(row, vocab):
    """The full logit vector from top_logits [[id, logit], ...], or (None, why)."""
    pairs = row.get("top_logits")
    if not isinstance(pairs, list) or len(pairs) != vocab:
        return None, "top_logits has %s entries, want %d" % (len(pairs) if isinstance(pairs, list) else "no", vocab)
    v = np.full(vocab, np.nan)
    for pair in pairs:
        i, x = int(pair[0]), float(pair[1])
        if not 0 <= i < vocab or not np.isnan(v[i]):
            return None, "top_logits id %d out of range or repeated" % i
        v[i] = x
    return v, None


def worst(ours, ref, n=5):
    idx = np.argsort(-np.abs(ours - ref))[:n]
    return ", ".join("id %d: ours %.6f ref %.6f" % (i, ours[i], ref[i]) for i in idx)


def check_variant(spec, variant, rows, refs, refs32, prompt_ids):
    """Compares one llmrun run with the reference; returns (max diff, loose diff, failures)."""
    fails, max_diff, loose = [], 0.0, 0.0
    for p, (row, ref, ref32, want_ids) in enumerate(zip(rows, refs, refs32, prompt_ids)):
        where = "%s %s prompt %d" % (spec.name, variant.name, p)
        if row.get("prompt_ids") != want_ids:
            fails.append("%s: prompt_ids %s, want %s" % (where, row.get("prompt_ids"), want_ids))
            continue
        ours, why = logits_vector(row, spec.vocab_size)
        if ours is None:
            fails.append("%s: %s" % (where, why))
            continue
        gen, gaps, last = ref
        diff = float(np.max(np.abs(ours - last)))
        max_diff = max(max_diff, diff)
        if not diff <= TOL:
            fails.append("%s: max |logit diff| %.3g > %g at the last prompt position (argmax ours %d ref %d); "
                         "worst: %s" % (where, diff, TOL, int(np.argmax(ours)), int(np.argmax(last)),
                                        worst(ours, last)))
        if variant.rounding != "f32":
            d32 = float(np.max(np.abs(ours - ref32[2])))
            loose = max(loose, d32)
            if not d32 <= LOOSE[variant.rounding]:
                fails.append("%s: max |logit diff| to the f32 reference %.3g > %g" %
                             (where, d32, LOOSE[variant.rounding]))
        msg = compare_ids(row.get("generated_ids", []), gen, gaps, spec.eos_id)
        if msg:
            fails.append("%s: generated_ids: %s" % (where, msg))
        text = expected_text(spec, row.get("generated_ids", []))
        if not msg and text is not None and row.get("text") != text:
            fails.append("%s: text %r, want %r" % (where, row.get("text"), text))
    return max_diff, loose, fails


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llmrun", help="path to the llmrun binary")
    ap.add_argument("--workdir", help="where to write checkpoints (kept); default: a temp dir, removed")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    args = ap.parse_args()
    if args.llmrun and not os.access(args.llmrun, os.X_OK):
        print("check_logits: %s is not an executable" % args.llmrun, file=sys.stderr)
        return 2
    cases = CASES
    if args.cases:
        wanted = args.cases.split(",")
        cases = [c for c in CASES if c[0].name in wanted]
        if len(cases) != len(wanted):
            print("check_logits: unknown case in %s (have %s)" % (wanted, [c[0].name for c in CASES]),
                  file=sys.stderr)
            return 2
    workdir = args.workdir or tempfile.mkdtemp(prefix="llmserve_reference_")
    os.makedirs(workdir, exist_ok=True)
    prompts_file = os.path.join(workdir, "prompts.jsonl")
    with open(prompts_file, "w", encoding="utf-8") as f:
        for p in PROMPTS:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")

    all_fails = []
    for spec, seed, shard, *rest in cases:
        t0 = time.time()
        variants, w32 = write_case(spec, seed, shard, workdir, *rest)
        cfg = ckpt.hf_config(spec)
        prompt_ids = [ckpt.encode_prompt(spec, p) for p in PROMPTS]
        ref_cache = {}

        def reference(v):
            key = (v.rounding, v.name.startswith("hf"))
            if key not in ref_cache:
                model = ReferenceModel(cfg, v.weights)
                ref_cache[key] = [model.greedy(ids, MAX_TOKENS, spec.eos_id) for ids in prompt_ids]
            return ref_cache[key]

        refs32 = reference(variants[0])
        parts, fails = [], []
        for v in variants:
            if not args.llmrun:
                reference(v)
                continue
            rows, err = run_llmrun(args.llmrun, v, prompts_file, spec.vocab_size)
            if err:
                fails.append("%s %s: llmrun %s" % (spec.name, v.name, err))
                parts.append("%s ERROR" % v.name)
                continue
            d, loose, f = check_variant(spec, v, rows, reference(v), refs32, prompt_ids)
            fails += f
            parts.append("%s %.1e%s" % (v.name, d, "" if v.rounding == "f32" else " (vs f32 %.1e)" % loose))
        status = "SKIP" if not args.llmrun else ("FAIL" if fails else "PASS")
        gens = " ".join(str(len(r[0])) for r in refs32)
        print("%s %-18s max|dlogit|: %s; ref greedy lens %s; %.1fs" %
              (status, spec.name, ", ".join(parts) or "reference only", gens, time.time() - t0), flush=True)
        for f in fails:
            print("    " + f, flush=True)
        all_fails += fails
        del w32
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    if not args.llmrun:
        print("check_logits: no --llmrun given: wrote the checkpoints and ran the reference only")
        return 77
    print("check_logits: %s (%d cases, %d failures)" % ("PASS" if not all_fails else "FAIL", len(cases),
                                                       len(all_fails)))
    return 1 if all_fails else 0


if __name__ == "__main__":
    sys.exit(main())
