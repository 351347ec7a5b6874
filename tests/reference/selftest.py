#!/usr/bin/python3
"""Self-tests of the Python reference: dtype rounding, the safetensors and GGUF writers
(read back byte by byte), llama.cpp's Q/K permutation against the two RoPE layouts, and
the reference forward pass's structural properties. Expected values come from first
principles (IEEE bit patterns, the RoPE and attention definitions), not from the code
under test. Exit status 0 when every check passes.
"""

import json
import math
import os
import struct
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoints as ckpt  # noqa: E402
import formats  # noqa: E402
import quants  # noqa: E402
import reference_model as ref  # noqa: E402

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)


def close(a, b, tol):
    return np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))) <= tol


def test_bf16_rounding():
    def bits(x):
        return int(formats.bf16_bits(np.array([x], dtype=np.float32))[0])
    one = 1.0
    check(bits(one) == 0x3F80, "bf16(1.0) == 0x3F80")
    check(bits(-2.5) == 0xC020, "bf16(-2.5) == 0xC020")
    check(bits(one + 2 ** -8) == 0x3F80, "bf16: tie 1+2^-8 rounds to even (down)")
    check(bits(one + 3 * 2 ** -8) == 0x3F82, "bf16: tie 1+3*2^-8 rounds to even (up)")
    check(bits(one + 2 ** -8 + 2 ** -16) == 0x3F81, "bf16: above the tie rounds up")
    check(bits(float("inf")) == 0x7F80, "bf16(inf) == 0x7F80")
    check(bits(3.4028234663852886e38) == 0x7F80, "bf16(FLT_MAX) overflows to inf")
    check(math.isnan(formats.round_to(np.array([np.nan]), "bf16")[0]), "bf16(NaN) is NaN")
    check(formats.round_to(np.array([one + 2 ** -11]), "f16")[0] == 1.0, "f16: tie 1+2^-11 rounds to even")
    raw = formats.encode(np.array([1.0, -2.0], dtype=np.float32), "bf16")
    check(raw == b"\x80\x3f\x00\xc0", "bf16 encoding is little-endian")


def test_safetensors(tmp):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal((7,)).astype(np.float32)
    for dt in formats.DTYPES:
        path = os.path.join(tmp, "t-%s.safetensors" % dt)
        w = formats.SafetensorsWriter(path, [("a", a.shape, dt), ("b", b.shape, dt)])
        w.write("a", a)
        w.write("b", b)
        w.close()
        blob = open(path, "rb").read()
        (n,) = struct.unpack_from("<Q", blob)
        header = json.loads(blob[8:8 + n])
        check(n % 8 == 0, "safetensors header padded to 8 bytes (%s)" % dt)
        check(header["a"]["shape"] == [3, 5] and header["a"]["data_offsets"][0] == 0, "safetensors header of a")
        isz = formats.ITEMSIZE[dt]
        check(len(blob) == 8 + n + (15 + 7) * isz, "safetensors file size (%s)" % dt)
        back = formats.read_safetensors(path)
        check(close(back["a"], formats.round_to(a, dt), 0) and close(back["b"], formats.round_to(b, dt), 0),
              "safetensors round trip (%s)" % dt)
    # f32 bytes of a exactly as numpy writes them
    blob = open(os.path.join(tmp, "t-f32.safetensors"), "rb").read()
    (n,) = struct.unpack_from("<Q", blob)
    check(blob[8 + n:8 + n + 60] == a.astype("<f4").tobytes(), "safetensors f32 payload bytes")


def test_hf_dir_sharded(tmp):
    spec = ckpt.ModelSpec("s", "qwen2", 32, 2, 4, 2, 48, 260, 64)
    w = ckpt.random_weights(spec, 3)
    d = os.path.join(tmp, "hf")
    ckpt.write_hf_dir(d, spec, w.__getitem__, "f32", shard_bytes=20000, tokenizer_json=ckpt.byte_tokenizer_json(spec))
    index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    shards = set(index["weight_map"].values())
    check(len(shards) > 2, "sharded into several files (%d)" % len(shards))
    check(set(index["weight_map"]) == set(w), "index lists every tensor")
    back = formats.read_hf_tensors(d)
    check(all(close(back[n], w[n], 0) for n in w), "sharded round trip")
    cfg = json.load(open(os.path.join(d, "config.json")))
    check(cfg["architectures"] == ["Qwen2ForCausalLM"] and cfg["num_key_value_heads"] == 2, "config.json keys")
    tok = json.load(open(os.path.join(d, "tokenizer.json")))
    vocab = tok["model"]["vocab"]
    check(len(vocab) == 260 and sorted(vocab.values()) == list(range(260)), "tokenizer vocab is 0..259")
    table = ckpt.bytes_to_unicode()
    check(len(set(table.values())) == 256 and table[ord("A")] == "A" and table[ord(" ")] == "\u0120",
          "GPT-2 byte table: bijective, 'A' -> 'A', ' ' -> U+0120")
    check(vocab["\u0120"] == 32 and vocab["<s>"] == 256, "byte token ids equal byte values")


def test_gguf(tmp):
    spec = ckpt.ModelSpec("g", "llama", 32, 2, 4, 2, 48, 260, 64, rope_scaling=dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=64))
    w = ckpt.random_weights(spec, 4)
    for dt in formats.DTYPES:
        path = os.path.join(tmp, "m-%s.gguf" % dt)
        ckpt.write_gguf(path, spec, w.__getitem__, dt, ckpt.byte_tokenizer_gguf_kvs(spec))
        blob = open(path, "rb").read()
        check(blob[:4] == b"GGUF" and struct.unpack_from("<I", blob, 4)[0] == 3, "GGUF magic and version 3")
        n_tensors, n_kv = struct.unpack_from("<QQ", blob, 8)
        check(n_tensors == len(w) + 1, "GGUF tensor count (+ rope_freqs)")
        kv, tensors = formats.read_gguf(path)
        check(len(kv) == n_kv, "GGUF kv count")
        check(kv["general.architecture"] == (formats.GGUF_STRING, "llama"), "general.architecture")
        check(kv["general.alignment"] == (formats.GGUF_U32, 32), "general.alignment 32")
        check(kv["llama.attention.head_count_kv"][1] == 2 and kv["llama.rope.dimension_count"][1] == 8,
              "llama.* hyper-parameters")
        check(kv["tokenizer.ggml.merges"] == (formats.GGUF_ARRAY, (formats.GGUF_STRING, [])), "empty merges")
        check(len(kv["tokenizer.ggml.tokens"][1][1]) == 260, "260 tokens")
        emb = tensors["token_embd.weight"]
        check(emb["shape"] == [260, 32] and emb["dtype"] == dt, "token_embd shape/dtype (%s)" % dt)
        check(tensors["blk.0.attn_norm.weight"]["dtype"] == "f32", "1-D tensors stay F32 (%s)" % dt)
        # dims are stored innermost first: token_embd's ne = [32, 260]
        name = b"token_embd.weight"
        at = blob.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
        check(struct.unpack_from("<IQQ", blob, at) == (2, 32, 260), "GGUF dims innermost first")
        check(close(emb["data"], formats.round_to(w["model.embed_tokens.weight"], dt), 0), "token_embd data")
        q = tensors["blk.1.attn_q.weight"]["data"]
        check(close(q, formats.round_to(ckpt.permute_qk(w["model.layers.1.self_attn.q_proj.weight"], 4, 4), dt), 0),
              "attn_q holds the permuted q_proj")
    factors = tensors["rope_freqs.weight"]["data"]
    # head_dim 8, theta 10000: wavelengths 2*pi*[1, 10, 100, 1000]; original context 64 with
    # low/high 1/4 -> high-frequency below 16, low-frequency above 64.
    smooth = (64 / (2 * math.pi * 10) - 1) / 3
    want = [1.0, 1.0 / ((1 - smooth) / 8 + smooth), 8.0, 8.0]
    check(close(factors, want, 1e-6), "rope_freqs llama3 factors %s want %s" % (factors, want))


def test_permutation_matches_rope_layouts():
    """Interleaved RoPE of permuted rows == the permutation of rotate-half RoPE."""
    rng = np.random.default_rng(5)
    for heads, kv_heads, d in ((4, 4, 8), (8, 2, 16)):
        inv = ref.rope_inv_freq(d, 10000.0, None)
        pos = np.arange(6, dtype=np.float64)
        for n_out, perm_args in ((heads * d, (heads, heads)), (kv_heads * d, (heads, kv_heads))):
            wq = rng.standard_normal((n_out, 12))
            x = rng.standard_normal((6, 12))
            half = ref.apply_rope((x @ wq.T).reshape(6, -1, d), pos, inv, "half").reshape(6, n_out)
            inter = ref.apply_rope((x @ ckpt.permute_qk(wq, *perm_args).T).reshape(6, -1, d), pos, inv,
                                   "interleaved").reshape(6, n_out)
            check(close(inter, ckpt.permute_qk(half.T, *perm_args).T, 1e-12),
                  "permute_qk maps rotate-half RoPE to interleaved RoPE (%d heads, %d kv)" % perm_args)
    # the permutation itself on one head of size 8: rows (0,4),(1,5),(2,6),(3,7) become adjacent pairs
    rows = ckpt.permute_qk(np.arange(8.0)[:, None], 1)[:, 0]
    check(list(rows) == [0, 4, 1, 5, 2, 6, 3, 7], "permute_qk row order %s" % list(rows))


def test_rope_scaling():
    inv = ref.rope_inv_freq(8, 10000.0, None)
    check(close(inv, [1, 0.1, 0.01, 0.001], 1e-15), "default inv_freq")
    check(close(ref.rope_inv_freq(8, 10000.0, {"rope_type": "linear", "factor": 4.0}), inv / 4, 0), "linear")
    l3 = ref.rope_inv_freq(8, 10000.0, dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                            high_freq_factor=4.0, original_max_position_embeddings=64))
    smooth = (64 / (2 * math.pi * 10) - 1) / 3
    check(close(l3, [1, (1 - smooth) * 0.1 / 8 + smooth * 0.1, 0.01 / 8, 0.001 / 8], 1e-15), "llama3 inv_freq")
    x = np.array([[[1.0, 0.0, 0.0, 0.0]]])  # pairs (0,2) and (1,3) in the half layout
    r = ref.apply_rope(x, np.array([1.0]), np.array([math.pi / 2, 0.0]), "half")
    check(close(r, [[[0.0, 0.0, 1.0, 0.0]]], 1e-15), "rotate-half turns x0 into x2 at angle pi/2")


def test_reference_model():
    rng = np.random.default_rng(6)
    spec = ckpt.ModelSpec("r", "llama", 32, 2, 4, 2, 48, 260, 64, rope_theta=500.0)
    w = ckpt.random_weights(spec, 7)
    cfg = ckpt.hf_config(spec)
    m = ref.ReferenceModel(cfg, w)
    ids = list(rng.integers(0, 256, 10))
    full = m.logits(ids)
    check(close(m.logits(ids[:6]), full[:6], 1e-12), "causal: a prefix's logits ignore later tokens")
    # GQA == MHA with each KV head's rows repeated for its group of query heads
    mha = dict(w)
    hd = spec.head_dim
    for i in range(spec.num_layers):
        for t in ("k_proj", "v_proj"):
            name = "model.layers.%d.self_attn.%s.weight" % (i, t)
            blocks = w[name].reshape(spec.num_kv_heads, hd, -1)
            mha[name] = np.repeat(blocks, 2, axis=0).reshape(spec.num_heads * hd, -1)
    cfg_mha = dict(cfg, num_key_value_heads=spec.num_heads)
    check(close(ref.ReferenceModel(cfg_mha, mha).logits(ids), full, 1e-12), "GQA equals repeated-KV MHA")
    # The GGUF side: the same model from permuted Q/K rows with interleaved RoPE.
    gw = {n: ckpt.gguf_tensor(spec, n, a) for n, a in w.items()}
    inter = ref.ReferenceModel(cfg, gw, rope_layout="interleaved")
    check(close(inter.logits(ids), full, 1e-10), "GGUF-permuted weights with interleaved RoPE == HF model")
    gen, gaps, last = m.greedy(ids, 3)
    check(gen[0] == int(np.argmax(full[-1])) and close(last, full[-1], 0), "greedy starts at argmax")
    check(close(ref.gelu_tanh(np.array([1.0])), [0.8411919906082768], 1e-12), "gelu_tanh(1)")
    check(close(ref.silu(np.array([1.0])), [1 / (1 + math.exp(-1))], 1e-15), "silu(1)")
    x = np.array([[3.0, 4.0]])
    check(close(ref.rms_norm(x, np.ones(2), 0.0), x / math.sqrt(12.5), 1e-15), "rms_norm")
    check(close(ref.layer_norm(x, np.ones(2), np.zeros(2), 0.0), [[-1.0, 1.0]], 1e-15), "layer_norm")


def test_gpt2_gguf_layout(tmp):
    spec = ckpt.ModelSpec("g2", "gpt2", 32, 1, 4, 4, 64, 260, 40, tied=True)
    w = ckpt.random_weights(spec, 8)
    path = os.path.join(tmp, "g2.gguf")
    ckpt.write_gguf(path, spec, w.__getitem__, "f32", ckpt.byte_tokenizer_gguf_kvs(spec))
    kv, tensors = formats.read_gguf(path)
    check(kv["general.architecture"][1] == "gpt2" and "output.weight" not in tensors, "gpt2 GGUF, tied head")
    qkv = tensors["blk.0.attn_qkv.weight"]
    check(qkv["shape"] == [96, 32] and close(qkv["data"], w["h.0.attn.c_attn.weight"].T, 0),
          "attn_qkv is c_attn transposed to [out, in]")
    check(tensors["position_embd.weight"]["shape"] == [40, 32], "position_embd shape")


def test_new_architectures(tmp):
    """Qwen3's q/k norm, Phi-3's fused weights, partial rotary and LongRoPE, and sliding
    windows, each against a property that follows from its definition."""
    rng = np.random.default_rng(9)
    ids = list(rng.integers(0, 256, 24))
    # Phi-3's fused qkv_proj / gate_up_proj are Wq|Wk|Wv and Wg|Wu stacked by rows: the
    # same model written as separate Llama weights gives the same logits.
    phi = ckpt.ModelSpec("p", "phi3", 32, 2, 4, 2, 48, 260, 64)
    w = ckpt.random_weights(phi, 10)
    cfg = ckpt.hf_config(phi)
    split, q, kv = {}, phi.num_heads * phi.head_dim, phi.num_kv_heads * phi.head_dim
    for n, a in w.items():
        if "qkv_proj" in n:
            for part, rows in zip(("q_proj", "k_proj", "v_proj"), (a[:q], a[q:q + kv], a[q + kv:])):
                split[n.replace("qkv_proj", part)] = rows
        elif "gate_up_proj" in n:
            split[n.replace("gate_up_proj", "gate_proj")], split[n.replace("gate_up_proj", "up_proj")] = np.split(a, 2)
        else:
            split[n] = a
    llama_cfg = dict(cfg, architectures=["LlamaForCausalLM"])
    full = ref.ReferenceModel(cfg, w).logits(ids)
    check(close(full, ref.ReferenceModel(llama_cfg, split).logits(ids), 1e-12), "phi3 fused == split llama weights")
    # LongRoPE with all factors 1 and no attention factor is plain RoPE.
    ones = dict(cfg, rope_scaling={"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0] * 4},
                original_max_position_embeddings=64)
    check(close(ref.ReferenceModel(ones, w).logits(ids), full, 1e-12), "longrope with unit factors == rope")
    # Long factors only for positions p with p + 1 > L0: a prefix within L0 ignores them.
    lr = dict(ones, rope_scaling={"type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0],
                                  "long_factor": [5.0, 6.0, 7.0, 8.0]}, original_max_position_embeddings=8,
              max_position_embeddings=8)  # scale 1: attention factor 1
    short_only = dict(lr, rope_scaling=dict(lr["rope_scaling"], long_factor=[1.0, 1.5, 2.0, 3.0]))
    a, b = ref.ReferenceModel(lr, w).logits(ids), ref.ReferenceModel(short_only, w).logits(ids)
    check(close(a[:8], b[:8], 1e-12) and not close(a[8:], b[8:], 1e-3), "long factors from position L0 on")
    # Partial rotary: the dims past rope_dim pass through unrotated.
    x = rng.standard_normal((3, 2, 8))
    r = ref.apply_rope(x, np.array([0.0, 1.0, 5.0]), np.array([0.3, 0.2, 0.1]), "half", rope_dim=6)
    check(close(r[..., 6:], x[..., 6:], 0) and not close(r[1:, :, :6], x[1:, :, :6], 1e-3), "partial rotary")
    # Qwen3: q and k are RMS-normalized per head, so scaling Wq and Wk changes nothing.
    qw = ckpt.ModelSpec("q3", "qwen3", 32, 2, 4, 2, 48, 260, 64, head_dim_override=16, norm_eps=1e-12)
    w3 = ckpt.random_weights(qw, 11)
    cfg3 = ckpt.hf_config(qw)
    scaled = {n: a * (4.0 if ("q_proj" in n or "k_proj" in n) else 1.0) for n, a in w3.items()}  # exact
    l3 = ref.ReferenceModel(cfg3, w3).logits(ids)
    check(close(l3, ref.ReferenceModel(cfg3, scaled).logits(ids), 1e-9), "qwen3 q/k norm: Wq, Wk scale-free")
    check(not close(l3, ref.ReferenceModel(dict(cfg3, architectures=["Qwen2ForCausalLM"]),
                                           {n: a for n, a in w3.items() if "_norm" not in n}).logits(ids), 1e-3),
          "qwen3 differs from qwen2 without the norms")
    # Sliding window W: with one layer, position t's logits depend on tokens t-W+1..t only.
    one = ckpt.ModelSpec("m", "mistral", 32, 1, 4, 2, 48, 260, 64, sliding_window=5)
    w1 = ckpt.random_weights(one, 12)
    m1 = ref.ReferenceModel(ckpt.hf_config(one), w1)
    ids2 = list(ids)
    ids2[3] = (ids2[3] + 1) % 256
    a, b = m1.logits(ids), m1.logits(ids2)
    check(close(a[8:], b[8:], 1e-12) and not close(a[3:8], b[3:8], 1e-6), "window 5: token 3 unseen from 8 on")
    wide = dict(ckpt.hf_config(one), sliding_window=64)
    check(close(ref.ReferenceModel(wide, w1).logits(ids), ref.ReferenceModel(dict(wide, sliding_window=None),
                                                                                w1).logits(ids), 1e-12),
          "a window covering the context is full attention")
    # Qwen2's window only on layers >= max_window_layers, and only with use_sliding_window.
    qs = ckpt.ModelSpec("q2", "qwen2", 32, 3, 4, 2, 48, 260, 64, sliding_window=4, max_window_layers=1)
    mq = ref.ReferenceModel(ckpt.hf_config(qs), ckpt.random_weights(qs, 13))
    check(mq.windows == [None, 4, 4], "qwen2 windows from max_window_layers: %s" % mq.windows)
    off = dict(ckpt.hf_config(qs), use_sliding_window=False)
    check(ref.ReferenceModel(off, ckpt.random_weights(qs, 13)).windows == [None] * 3, "use_sliding_window false")
    # GGUF: phi3/qwen3 keep HF's rows (NEOX RoPE), phi3's gate_up is ffn_up, factors as tensors.
    lspec = ckpt.ModelSpec("p2", "phi3", 32, 1, 4, 2, 48, 260, 64, partial_rotary_factor=0.5, original_context=16,
                           rope_scaling={"type": "longrope", "short_factor": [1.0, 2.0], "long_factor": [3.0, 4.0]},
                           sliding_window=8)
    wl = ckpt.random_weights(lspec, 14)
    path = os.path.join(tmp, "phi3.gguf")
    ckpt.write_gguf(path, lspec, wl.__getitem__, "f32", ckpt.byte_tokenizer_gguf_kvs(lspec))
    kv, tensors = formats.read_gguf(path)
    check(kv["general.architecture"][1] == "phi3" and kv["phi3.rope.dimension_count"][1] == 4, "phi3 GGUF keys")
    check(kv["phi3.attention.sliding_window"][1] == 8 and kv["phi3.rope.scaling.original_context_length"][1] == 16,
          "phi3 window and original context")
    check(abs(kv["phi3.rope.scaling.attn_factor"][1] - math.sqrt(1 + math.log(4) / math.log(16))) < 1e-6,
          "phi3 attention factor")
    check(close(tensors["rope_factors_long.weight"]["data"], [3.0, 4.0], 0), "rope_factors_long")
    check(close(tensors["blk.0.attn_qkv.weight"]["data"], wl["model.layers.0.self_attn.qkv_proj.weight"], 0),
          "phi3 attn_qkv unpermuted")
    check(tensors["blk.0.ffn_up.weight"]["shape"] == [96, 32] and "blk.0.ffn_gate.weight" not in tensors,
          "phi3 ffn_up holds gate | up")


def test_block_formats():
    """Blocks built by hand from ggml's struct layouts decode to the values they encode;
    every format's random blocks decode to a trained model's scale; activation rounding
    keeps every value within half a step."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 32, size=32)
    half = lambda v: np.float16(v).tobytes()  # noqa: E731
    nib = bytes(int(codes[j] & 15) | (int(codes[j + 16] & 15) << 4) for j in range(16))
    qh = struct.pack("<I", sum(int(codes[j] >> 4) << j for j in range(32)))
    d, m = 0.25, -1.5
    blocks = {"Q4_0": (half(d) + nib, (codes & 15) - 8.0),
              "Q4_1": (half(d) + half(m) + nib, (codes & 15) * d + m),
              "Q5_0": (half(d) + qh + nib, codes - 16.0),
              "Q5_1": (half(d) + half(m) + qh + nib, codes * d + m)}
    for name, (raw, want) in blocks.items():
        scale = d if name.endswith("_0") else 1.0
        check(np.array_equal(quants.dequantize(name, raw, (32,)), want * scale), "%s hand-built block" % name)
    q8 = rng.integers(-128, 128, size=32)
    check(np.array_equal(quants.dequantize("Q8_0", half(d) + q8.astype(np.int8).tobytes(), (32,)), q8 * d),
          "Q8_0 hand-built block")
    for name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K"):
        w = quants.dequantize(name, quants.random_blocks(name, 64, 512, rng), (64, 512))
        check(0.01 < w.std() < 0.04 and abs(w.mean()) < 0.005, "%s random blocks: std %.3f mean %.4f"
              % (name, w.std(), w.mean()))
    x = rng.standard_normal((3, 80)).astype(np.float32)
    xq = quants.quantize_activations(x)
    step = np.repeat(np.abs(np.concatenate([x, np.zeros((3, 16), np.float32)], 1)).reshape(3, 3, 32).max(2) / 127,
                     32, axis=1)[:, :80]
    check(np.all(np.abs(xq - x) <= 0.5 * step * (1 + 1e-6)), "activation rounding within half a step")


def main():
    with tempfile.TemporaryDirectory(prefix="llmserve_ref_selftest_") as tmp:
        test_bf16_rounding()
        test_safetensors(tmp)
        test_hf_dir_sharded(tmp)
        test_gguf(tmp)
        test_gpt2_gguf_layout(tmp)
        test_permutation_matches_rope_layouts()
        test_rope_scaling()
        test_reference_model()
        test_new_architectures(tmp)
        test_block_formats()
    print("selftest: %s (%d failures)" % ("PASS" if not FAILURES else "FAIL", len(FAILURES)))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
