#!/usr/bin/python3
"""Test checkpoint writers: random-weight models saved as HuggingFace directories
(config.json + safetensors, optionally sharded, + a byte-level tokenizer.json) and as
GGUF v3 files (with the equivalent tokenizer.ggml.* metadata), using the names and
conventions of HF transformers and of llama.cpp's convert_hf_to_gguf.py.

Weights are dicts {HF tensor name: float32 array}; writers take a callable
name -> array so that big checkpoints can be generated one tensor at a time.
"""

import dataclasses
import json
import math
import os
import shutil

import sys

import numpy as np

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import formats  # noqa: E402

LLAMA_FAMILY = ("llama", "mistral", "qwen2", "qwen3", "phi3")
HF_ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                    "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "phi3": "Phi3ForCausalLM",
                    "gpt2": "GPT2LMHeadModel"}
# general.architecture llama.cpp's converter gives each (Mistral converts as llama).
GGUF_ARCH = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "phi3": "phi3", "gpt2": "gpt2"}


@dataclasses.dataclass
class ModelSpec:
    """The shape and hyper-parameters of a decoder-only model."""
    name: str
    arch: str                     # llama, mistral, qwen2, qwen3, phi3, gpt2
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    ffn_dim: int
    vocab_size: int
    context_length: int
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_scaling: dict = None     # HF form: {"rope_type": "llama3", "factor": ...}, linear, or
                                  # {"type": "longrope", "short_factor": [...], "long_factor": [...]}
    tied: bool = False
    bos_id: int = 256
    eos_id: int = 257
    head_dim_override: int = None       # config head_dim (Qwen3: may differ from hidden / heads)
    sliding_window: int = None          # mistral, phi3: every layer; qwen2/3: see max_window_layers
    max_window_layers: int = None       # qwen2/3: use_sliding_window, window on layers >= this
    partial_rotary_factor: float = None  # phi3: rotate int(head_dim * f) dims of each head
    original_context: int = None        # phi3 longrope: original_max_position_embeddings

    @property
    def head_dim(self):
        return self.head_dim_override or self.hidden_size // self.num_heads

    @property
    def rope_dim(self):
        return int(self.head_dim * (self.partial_rotary_factor or 1.0))


# ---- Tensor names and shapes (HF) ------------------------------------------------------


def hf_tensor_shapes(spec):
    """[(HF name, shape)] in a stable order; Conv1D weights of GPT-2 are [in, out]."""
    d, f, v = spec.hidden_size, spec.ffn_dim, spec.vocab_size
    out = []
    if spec.arch == "gpt2":
        out += [("wte.weight", (v, d)), ("wpe.weight", (spec.context_length, d))]
        for i in range(spec.num_layers):
            p = "h.%d." % i
            out += [(p + "ln_1.weight", (d,)), (p + "ln_1.bias", (d,)),
                    (p + "attn.c_attn.weight", (d, 3 * d)), (p + "attn.c_attn.bias", (3 * d,)),
                    (p + "attn.c_proj.weight", (d, d)), (p + "attn.c_proj.bias", (d,)),
                    (p + "ln_2.weight", (d,)), (p + "ln_2.bias", (d,)),
                    (p + "mlp.c_fc.weight", (d, f)), (p + "mlp.c_fc.bias", (f,)),
                    (p + "mlp.c_proj.weight", (f, d)), (p + "mlp.c_proj.bias", (d,))]
        out += [("ln_f.weight", (d,)), ("ln_f.bias", (d,))]
    else:
        q, kv = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
        out.append(("model.embed_tokens.weight", (v, d)))
        for i in range(spec.num_layers):
            p = "model.layers.%d." % i
            out.append((p + "input_layernorm.weight", (d,)))
            if spec.arch == "phi3":  # fused q|k|v and gate|up
                out.append((p + "self_attn.qkv_proj.weight", (q + 2 * kv, d)))
            else:
                out += [(p + "self_attn.q_proj.weight", (q, d)), (p + "self_attn.k_proj.weight", (kv, d)),
                        (p + "self_attn.v_proj.weight", (kv, d))]
            if spec.arch == "qwen2":
                out += [(p + "self_attn.q_proj.bias", (q,)), (p + "self_attn.k_proj.bias", (kv,)),
                        (p + "self_attn.v_proj.bias", (kv,))]
            if spec.arch == "qwen3":
                out += [(p + "self_attn.q_norm.weight", (spec.head_dim,)),
                        (p + "self_attn.k_norm.weight", (spec.head_dim,))]
            out += [(p + "self_attn.o_proj.weight", (d, q)), (p + "post_attention_layernorm.weight", (d,))]
            if spec.arch == "phi3":
                out.append((p + "mlp.gate_up_proj.weight", (2 * f, d)))
            else:
                out += [(p + "mlp.gate_proj.weight", (f, d)), (p + "mlp.up_proj.weight", (f, d))]
            out.append((p + "mlp.down_proj.weight", (d, f)))
        out.append(("model.norm.weight", (d,)))
    if not spec.tied:
        out.append(("lm_head.weight", (v, d)))
    return out


def _is_norm(name):
    return "norm" in name or ".ln_" in name or name.startswith("ln_")


def random_tensor(spec, name, shape, rng, std=None):
    """One random tensor with a scale that keeps activations and logits O(1).
    std: fixed standard deviation for every matrix (benchmark models), None for scaled."""
    if _is_norm(name) and name.endswith(".weight"):
        return (np.ones(shape) if std is not None else 1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    if len(shape) == 1:  # biases
        scale = 0.0 if std is not None else (0.5 if "k_proj" in name or "q_proj" in name else 0.1)
        return (scale * rng.standard_normal(shape)).astype(np.float32)
    if std is not None:
        s = std
    elif name in ("model.embed_tokens.weight", "wte.weight"):
        s = 0.2 if spec.tied else 1.0
    elif name == "wpe.weight":
        s = 0.3
    else:  # a linear layer: 1/sqrt(fan_in); Conv1D weights are [in, out]
        fan_in = shape[0] if spec.arch == "gpt2" and ".c_" in name else shape[1]
        s = 1.0 / math.sqrt(fan_in)
    return (s * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)


def random_weights(spec, seed):
    """{HF name: float32 array} for `spec`, reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    return {name: random_tensor(spec, name, shape, rng) for name, shape in hf_tensor_shapes(spec)}


# ---- HF directory ---------------------------------------------------------------------


def hf_config(spec):
    """config.json contents in HF transformers' keys."""
    if spec.arch == "gpt2":
        return {"architectures": [HF_ARCHITECTURES["gpt2"]], "model_type": "gpt2",
                "n_embd": spec.hidden_size, "n_layer": spec.num_layers, "n_head": spec.num_heads,
                "n_positions": spec.context_length, "n_ctx": spec.context_length, "n_inner": spec.ffn_dim,
                "layer_norm_epsilon": spec.norm_eps, "vocab_size": spec.vocab_size,
                "activation_function": "gelu_new", "tie_word_embeddings": spec.tied,
                "bos_token_id": spec.bos_id, "eos_token_id": spec.eos_id, "torch_dtype": "float32"}
    c = {"architectures": [HF_ARCHITECTURES[spec.arch]], "model_type": spec.arch,
         "hidden_size": spec.hidden_size, "intermediate_size": spec.ffn_dim,
         "num_hidden_layers": spec.num_layers, "num_attention_heads": spec.num_heads,
         "num_key_value_heads": spec.num_kv_heads, "hidden_act": "silu", "rms_norm_eps": spec.norm_eps,
         "rope_theta": spec.rope_theta, "rope_scaling": spec.rope_scaling,
         "max_position_embeddings": spec.context_length, "vocab_size": spec.vocab_size,
         "tie_word_embeddings": spec.tied, "bos_token_id": spec.bos_id, "eos_token_id": spec.eos_id,
         "torch_dtype": "float32"}
    if spec.head_dim_override:
        c["head_dim"] = spec.head_dim_override
    if spec.arch == "mistral":
        c["sliding_window"] = spec.sliding_window or 4096  # 4096: larger than any test context, no effect
    if spec.arch in ("qwen2", "qwen3"):
        c["use_sliding_window"] = spec.sliding_window is not None
        c["sliding_window"] = spec.sliding_window or 4096
        c["max_window_layers"] = spec.max_window_layers if spec.max_window_layers is not None else 28
    if spec.arch == "qwen3":
        c["attention_bias"] = False
    if spec.arch == "phi3":
        c["sliding_window"] = spec.sliding_window
        c["original_max_position_embeddings"] = spec.original_context or spec.context_length
        if spec.partial_rotary_factor:
            c["partial_rotary_factor"] = spec.partial_rotary_factor
    return c


def write_hf_dir(directory, spec, get_tensor, dtype="f32", shard_bytes=None, tokenizer_json=None):
    """Writes config.json and the weights (model.safetensors, or shards of at most
    `shard_bytes` plus model.safetensors.index.json). get_tensor(hf_name) -> float32 array.
    tokenizer_json: a dict to save as tokenizer.json, or a path to copy."""
    os.makedirs(directory, exist_ok=True)
    cfg = hf_config(spec)
    cfg["torch_dtype"] = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[dtype]
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    entries = [(n, s, dtype) for n, s in hf_tensor_shapes(spec)]
    shards = [[]]
    size = 0
    for e in entries:
        nbytes = formats.numel(e[1]) * formats.ITEMSIZE[dtype]
        if shard_bytes and shards[-1] and size + nbytes > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(e)
        size += nbytes
    for stale in ("model.safetensors", "model.safetensors.index.json"):
        if os.path.exists(os.path.join(directory, stale)):
            os.remove(os.path.join(directory, stale))
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        fname = ("model.safetensors" if len(shards) == 1
                 else "model-%05d-of-%05d.safetensors" % (i + 1, len(shards)))
        w = formats.SafetensorsWriter(os.path.join(directory, fname), shard)
        for name, _, _ in shard:
            w.write(name, get_tensor(name))
            weight_map[name] = fname
        w.close()
        total += w.total_bytes
    if len(shards) > 1:
        with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    if isinstance(tokenizer_json, dict):
        with open(os.path.join(directory, "tokenizer.json"), "w") as f:
            json.dump(tokenizer_json, f, ensure_ascii=False)
    elif tokenizer_json:
        shutil.copyfile(tokenizer_json, os.path.join(directory, "tokenizer.json"))


# ---- GGUF -----------------------------------------------------------------------------


def permute_qk(w, n_head, n_head_kv=None):
    """llama.cpp's LlamaModel.permute: reorders the rows of each head of a Q or K weight
    (or bias) from HF's rotate-half pairing (i, i + d/2) to interleaved pairs (2i, 2i+1)."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape))


_LLAMA_LAYER = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
                "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                "mlp.down_proj": "ffn_down"}
_GPT2_LAYER = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
               "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
_GLOBAL = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight", "wte.weight": "token_embd.weight",
           "wpe.weight": "position_embd.weight", "ln_f.weight": "output_norm.weight",
           "ln_f.bias": "output_norm.bias"}


_LLAMA_LAYER.update({"self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",  # qwen3
                     "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up"})    # phi3: fused


def gguf_name(spec, hf_name):
    """The GGUF tensor name llama.cpp gives an HF tensor (phi3's gate_up_proj becomes
    ffn_up, holding gate | up)."""
    if hf_name in _GLOBAL:
        return _GLOBAL[hf_name]
    prefix, table = ("model.layers.", _LLAMA_LAYER) if spec.arch != "gpt2" else ("h.", _GPT2_LAYER)
    layer, rest = hf_name[len(prefix):].split(".", 1)
    module, param = rest.rsplit(".", 1)
    return "blk.%s.%s.%s" % (layer, table[module], param)


def gguf_tensor(spec, hf_name, a):
    """An HF tensor converted as convert_hf_to_gguf.py does: Q/K rows permuted (llama
    arch only: qwen2, qwen3 and phi3 keep HF's rows, llama.cpp rotates them NEOX-style),
    Conv1D weights transposed to [out, in] (GPT-2)."""
    if spec.arch == "gpt2":
        return np.ascontiguousarray(a.T) if a.ndim == 2 and ".c_" in hf_name else a
    if GGUF_ARCH[spec.arch] != "llama":
        return a
    if "q_proj" in hf_name:
        return permute_qk(a, spec.num_heads, spec.num_heads)
    if "k_proj" in hf_name:
        return permute_qk(a, spec.num_heads, spec.num_kv_heads)
    return a


def gguf_storage_dtype(ndim, dtype):
    """llama.cpp keeps 1-D tensors (norms, biases, rope factors) in F32."""
    return "f32" if ndim <= 1 else dtype


def gguf_rounded(spec, weights, dtype):
    """HF weights as a GGUF of `dtype` stores them (the values a loader reads back)."""
    return {n: formats.round_to(a, gguf_storage_dtype(a.ndim, dtype)) for n, a in weights.items()}


def llama3_rope_factors(spec):
    """rope_freqs.weight as convert_hf_to_gguf.py computes it for rope_type llama3."""
    s = spec.rope_scaling
    dim = spec.head_dim
    factor, low, high = s["factor"], s.get("low_freq_factor", 1.0), s.get("high_freq_factor", 4.0)
    old = s.get("original_max_position_embeddings", 8192)
    out = []
    for i in range(0, dim, 2):
        freq = 1.0 / (spec.rope_theta ** (i / dim))
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def gguf_hparams(spec, dtype):
    """The general.* and <arch>.* metadata."""
    F = formats
    arch = GGUF_ARCH[spec.arch]
    kv = [("general.architecture", F.GGUF_STRING, arch), ("general.name", F.GGUF_STRING, spec.name),
          ("general.file_type", F.GGUF_U32, {"f32": 0, "f16": 1, "bf16": 32}[dtype]),
          (arch + ".context_length", F.GGUF_U32, spec.context_length),
          (arch + ".embedding_length", F.GGUF_U32, spec.hidden_size),
          (arch + ".block_count", F.GGUF_U32, spec.num_layers),
          (arch + ".feed_forward_length", F.GGUF_U32, spec.ffn_dim),
          (arch + ".attention.head_count", F.GGUF_U32, spec.num_heads)]
    if arch == "gpt2":
        return kv + [("gpt2.attention.layer_norm_epsilon", F.GGUF_F32, spec.norm_eps)]
    a = arch + "."
    kv += [(a + "attention.head_count_kv", F.GGUF_U32, spec.num_kv_heads),
           (a + "attention.layer_norm_rms_epsilon", F.GGUF_F32, spec.norm_eps),
           (a + "rope.freq_base", F.GGUF_F32, spec.rope_theta),
           (a + "rope.dimension_count", F.GGUF_U32, spec.rope_dim),
           (a + "vocab_size", F.GGUF_U32, spec.vocab_size)]
    if spec.head_dim_override:  # the converter writes config head_dim as key/value length
        kv += [(a + "attention.key_length", F.GGUF_U32, spec.head_dim),
               (a + "attention.value_length", F.GGUF_U32, spec.head_dim)]
    if spec.arch in ("mistral", "phi3") and spec.sliding_window:
        kv.append((a + "attention.sliding_window", F.GGUF_U32, spec.sliding_window))
    s = spec.rope_scaling or {}
    kind = s.get("rope_type", s.get("type"))
    if kind == "linear":
        kv += [(a + "rope.scaling.type", F.GGUF_STRING, "linear"),
               (a + "rope.scaling.factor", F.GGUF_F32, s["factor"])]
    elif kind == "llama3":  # factors go into rope_freqs.weight; the context lets a loader verify them
        kv.append((a + "rope.scaling.original_context_length", F.GGUF_U32,
                   s.get("original_max_position_embeddings", 8192)))
    elif kind in ("longrope", "su"):  # Phi3MiniModel: factors as rope_factors_{long,short}.weight
        orig = spec.original_context
        scale = spec.context_length / orig
        attn = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0
        kv += [(a + "rope.scaling.original_context_length", F.GGUF_U32, orig),
               (a + "rope.scaling.attn_factor", F.GGUF_F32, attn)]
    return kv


def write_gguf(path, spec, get_tensor, dtype="f32", tokenizer_kvs=()):
    """Writes `spec`'s weights (get_tensor(hf_name) -> float32 array, HF layout) as a GGUF
    v3 file of `dtype` with llama.cpp's names, permutations and metadata."""
    order = [(gguf_name(spec, n), n, s) for n, s in hf_tensor_shapes(spec)]
    tensors = []
    extra = {}
    s = spec.rope_scaling or {}
    if spec.arch != "gpt2" and s.get("rope_type", s.get("type")) == "llama3":
        extra["rope_freqs.weight"] = llama3_rope_factors(spec)
    if spec.arch != "gpt2" and s.get("rope_type", s.get("type")) in ("longrope", "su"):
        extra["rope_factors_long.weight"] = np.asarray(s["long_factor"], dtype=np.float32)
        extra["rope_factors_short.weight"] = np.asarray(s["short_factor"], dtype=np.float32)
    for name, a in extra.items():
        tensors.append((name, a.shape, "f32"))
    for gname, hname, shape in order:
        gshape = tuple(reversed(shape)) if spec.arch == "gpt2" and len(shape) == 2 and ".c_" in hname else shape
        tensors.append((gname, gshape, gguf_storage_dtype(len(shape), dtype)))
    w = formats.GgufWriter(path, gguf_hparams(spec, dtype) + list(tokenizer_kvs), tensors)
    for name, a in extra.items():
        w.write(name, a)
    for gname, hname, _ in order:
        w.write(gname, gguf_tensor(spec, hname, get_tensor(hname)))
    w.close()


# ---- Byte-level tokenizer ------------------------------------------------------------


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def byte_vocab(spec):
    """Token pieces: id b < 256 is byte b, then <s>, </s>, then unused fillers."""
    table = bytes_to_unicode()
    if spec.vocab_size < 258 or spec.bos_id != 256 or spec.eos_id != 257:
        raise ValueError("the byte tokenizer needs vocab >= 258, bos 256, eos 257")
    pieces = [table[b] for b in range(256)] + ["<s>", "</s>"]
    pieces += ["<unused%d>" % i for i in range(spec.vocab_size - 258)]
    return pieces


def encode_prompt(spec, text):
    """Token ids the byte tokenizer gives `text`: BOS, then one id per UTF-8 byte."""
    return [spec.bos_id] + list(text.encode("utf-8"))


def byte_tokenizer_json(spec):
    """An HF tokenizer.json: byte-level BPE, 256 byte tokens, no merges, BOS added."""
    pieces = byte_vocab(spec)
    special = [{"id": i, "content": pieces[i], "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i in (spec.bos_id, spec.eos_id)]
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special, "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, bos, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [spec.bos_id], "tokens": ["<s>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": {p: i for i, p in enumerate(pieces)}, "merges": []},
    }


def byte_tokenizer_gguf_kvs(spec):
    """The same tokenizer as tokenizer.ggml.* metadata (llama.cpp's gpt2 model)."""
    F = formats
    pieces = byte_vocab(spec)
    types = [1] * len(pieces)  # NORMAL
    types[spec.bos_id] = types[spec.eos_id] = 3  # CONTROL
    return [("tokenizer.ggml.model", F.GGUF_STRING, "gpt2"), ("tokenizer.ggml.pre", F.GGUF_STRING, "gpt-2"),
            ("tokenizer.ggml.tokens", F.GGUF_ARRAY, (F.GGUF_STRING, pieces)),
            ("tokenizer.ggml.token_type", F.GGUF_ARRAY, (F.GGUF_I32, types)),
            ("tokenizer.ggml.merges", F.GGUF_ARRAY, (F.GGUF_STRING, [])),
            ("tokenizer.ggml.bos_token_id", F.GGUF_U32, spec.bos_id),
            ("tokenizer.ggml.eos_token_id", F.GGUF_U32, spec.eos_id),
            ("tokenizer.ggml.add_bos_token", F.GGUF_BOOL, True),
            ("tokenizer.ggml.add_eos_token", F.GGUF_BOOL, False)]


def copy_gguf_tokenizer_kvs(vocab_gguf):
    """The tokenizer.ggml.* metadata of another GGUF file (e.g. a vocab-only one), as
    (key, type, value) triples for GgufWriter."""
    kv, _ = formats.read_gguf(vocab_gguf, load_tensors=False)
    return [(key, vtype, value) for key, (vtype, value) in kv.items() if key.startswith("tokenizer.")]
