#!/usr/bin/python3
"""Writes Llama-shaped random-weight checkpoints for the benchmarks (issue 3).

  scripts/gen_bench_models.py --out DIR [--models small,1b] [--formats hf,gguf]
                              [--dtype bf16|f16|f32] [--seed N] [--assets DIR] [--skip-existing]

Models (context 2048, vocab 32000, untied head, RMSNorm eps 1e-5, RoPE theta 10000):
  small  ~125M: dim 768, 12 layers, 12 heads, 4 KV heads, FFN 2048
  1b     TinyLlama shape, 1.1B: dim 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632
Weights ~ N(0, 0.02), norm weights 1, seeded per tensor, so the HF and GGUF outputs of
one model hold the same weights (the GGUF's Q/K rows permuted as llama.cpp does).

Outputs (written under a temporary name and renamed when complete):
  DIR/<model>-<dtype>-hf/    config.json, model.safetensors, and the Llama 2 tokenizer.json
                             + tokenizer_config.json copied from the shared assets
  DIR/<model>-<dtype>.gguf   with the Llama 2 vocabulary (tokenizer.ggml.*) copied from
                             the assets' ggml-vocab-llama-spm.gguf
Generated into a build or temp folder; never commit the outputs. Tensors are generated
and written one at a time, so memory stays around one tensor (the 1b embedding: 262 MB).
Uses Debian's python3-numpy (scripts/install-deps.sh).
"""

import argparse
import os
import shutil
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
import checkpoints as ckpt  # noqa: E402
import formats  # noqa: E402

MODELS = {
    "small": ckpt.ModelSpec("llama-small", "llama", hidden_size=768, num_layers=12, num_heads=12, num_kv_heads=4,
                            ffn_dim=2048, vocab_size=32000, context_length=2048, norm_eps=1e-5,
                            rope_theta=10000.0, bos_id=1, eos_id=2),
    "1b": ckpt.ModelSpec("llama-1b", "llama", hidden_size=2048, num_layers=22, num_heads=32, num_kv_heads=4,
                         ffn_dim=5632, vocab_size=32000, context_length=2048, norm_eps=1e-5,
                         rope_theta=10000.0, bos_id=1, eos_id=2),
}
STD = 0.02
HF_TOKENIZER = os.path.join("models", "tokenizers", "hf", "llama2")
GGUF_VOCAB = os.path.join("models", "tokenizers", "gguf", "ggml-vocab-llama-spm.gguf")


def tensor_source(spec, seed):
    """get_tensor(hf_name): the tensor, generated from its own seeded stream."""
    index = {name: i for i, (name, _) in enumerate(ckpt.hf_tensor_shapes(spec))}
    shapes = dict(ckpt.hf_tensor_shapes(spec))

    def get(name):
        rng = np.random.default_rng([seed, index[name]])
        return ckpt.random_tensor(spec, name, shapes[name], rng, std=STD)
    return get


def param_count(spec):
    return sum(formats.numel(s) for _, s in ckpt.hf_tensor_shapes(spec))


def write_hf(out, spec, dtype, seed, assets):
    tmp = out + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    ckpt.write_hf_dir(tmp, spec, tensor_source(spec, seed), dtype,
                      tokenizer_json=os.path.join(assets, HF_TOKENIZER, "tokenizer.json"))
    shutil.copyfile(os.path.join(assets, HF_TOKENIZER, "tokenizer_config.json"),
                    os.path.join(tmp, "tokenizer_config.json"))
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


def write_gguf(out, spec, dtype, seed, assets):
    tmp = out + ".partial"
    vocab = ckpt.copy_gguf_tokenizer_kvs(os.path.join(assets, GGUF_VOCAB))
    ckpt.write_gguf(tmp, spec, tensor_source(spec, seed), dtype, vocab)
    os.replace(tmp, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (a build or temp folder)")
    ap.add_argument("--models", default="small,1b", help="comma-separated: small, 1b")
    ap.add_argument("--formats", default="hf,gguf", help="comma-separated: hf, gguf")
    ap.add_argument("--dtype", default="bf16", choices=formats.DTYPES)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--assets", default=os.environ.get("LLMSERVE_TEST_ASSETS") or os.path.join(REPO, "..", "shared"),
                    help="shared assets directory (default $LLMSERVE_TEST_ASSETS or <repo>/../shared)")
    ap.add_argument("--skip-existing", action="store_true", help="keep outputs that already exist")
    args = ap.parse_args()
    models = args.models.split(",")
    fmts = args.formats.split(",")
    for m in models:
        if m not in MODELS:
            ap.error("unknown model %r (have %s)" % (m, ", ".join(MODELS)))
    for f in fmts:
        if f not in ("hf", "gguf"):
            ap.error("unknown format %r (hf, gguf)" % f)
    assets = os.path.abspath(args.assets)
    needed = ([os.path.join(HF_TOKENIZER, "tokenizer.json")] if "hf" in fmts else []) + \
        ([GGUF_VOCAB] if "gguf" in fmts else [])
    for rel in needed:
        if not os.path.exists(os.path.join(assets, rel)):
            print("gen_bench_models: %s not found (set --assets or LLMSERVE_TEST_ASSETS)" %
                  os.path.join(assets, rel), file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)
    for m in models:
        spec = MODELS[m]
        for fmt in fmts:
            out = os.path.join(args.out, "%s-%s%s" % (spec.name, args.dtype, "-hf" if fmt == "hf" else ".gguf"))
            if args.skip_existing and os.path.exists(out):
                print("%s: exists, kept" % out)
                continue
            t0 = time.time()
            (write_hf if fmt == "hf" else write_gguf)(out, spec, args.dtype, args.seed, assets)
            size = (sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
                    if os.path.isdir(out) else os.path.getsize(out))
            print("%s: %.1fM parameters, %.2f GB, %.1f s" % (out, param_count(spec) / 1e6, size / 1e9,
                                                             time.time() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
