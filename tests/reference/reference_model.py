#!/usr/bin/python3
"""An independent float64 numpy forward pass for decoder-only transformers, written
from the papers' equations and HF transformers' documented conventions (not from
llmserve's C++):

  Llama family (Touvron et al. 2023; Mistral; Qwen2; Qwen3; Phi-3):
    x = E[ids]
    per layer:  h = RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g
                q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)     (Qwen2: biases;
                          Phi-3: one qkv_proj whose rows are Wq | Wk | Wv)
                Qwen3: q, k = RMSNorm(q_head) * g_q, RMSNorm(k_head) * g_k, per head
                RoPE (Su et al. 2021) on q, k, HF "rotate half" pairing (i, i + r/2) over
                the first r = int(d * partial_rotary_factor) dims of each head (r = d if absent)
                GQA: query head j reads KV head j // (H / H_kv)
                a = softmax(q k^T / sqrt(d) + mask) v;   x += a Wo^T
                    mask: causal; on a sliding-window layer also key s > t - W (HF's
                    sliding_window_overlay: the last W tokens, the query's own included)
                h = RMSNorm(x);  x += (silu(h Wg^T) * (h Wu^T)) Wd^T        (SwiGLU;
                          Phi-3: one gate_up_proj whose rows are Wg | Wu)
    logits = RMSNorm(x) W_head^T, W_head = E when tied
    Sliding windows (HF configs): Mistral and Phi-3 `sliding_window` on every layer;
    Qwen2/3 only with use_sliding_window, on layers i >= max_window_layers (default 28)
    or those `layer_types` calls "sliding_attention".
  GPT-2 (Radford et al. 2019):
    x = wte[ids] + wpe[positions]
    per layer:  h = LayerNorm(x); q|k|v = h W_attn + b   (Conv1D: W is [in, out])
                x += softmax(q k^T / sqrt(d) + mask) v W_proj + b
                h = LayerNorm(x); x += gelu_tanh(h W_fc + b) W_proj2 + b
    logits = LayerNorm_f(x) wte^T

RoPE frequencies: inv_freq_i = theta^(-2i/r); "linear" scaling divides them by the
factor; "llama3" scaling follows HF's _compute_llama3_parameters (low-frequency
bands divided by the factor, high ones kept, a smooth blend between); "longrope"
(Phi-3, HF's _compute_longrope_parameters) divides them by short_factor_i or
long_factor_i and multiplies cos and sin by the attention factor
sqrt(1 + ln(s) / ln(L0)), s = max_position_embeddings / L0 (1 when s <= 1), L0 =
original_max_position_embeddings. HF takes the long factors when seq_len > L0; here each
token at position p uses them when p + 1 > L0 (HF's rule for every token it generates one
at a time; HF's one-pass prefill of a prompt longer than L0 would rotate that prompt's
first L0 tokens with the long factors too).

Usage: reference_model.py HF_DIR [--prompt-ids 256,72,105 ...] [--max-tokens N]
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import formats  # noqa: E402
import quants  # noqa: E402


def rope_inv_freq(head_dim, theta, scaling):
    """Per-pair inverse frequencies (length head_dim / 2), with HF's rope scaling."""
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / scaling["factor"]
    if kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return np.where(medium, smoothed, scaled)
    raise ValueError("rope scaling %r not implemented in the reference" % kind)


def apply_rope(x, positions, inv_freq, layout="half", rope_dim=None, mscale=1.0):
    """Rotates x [T, heads, d] by angle position * inv_freq per pair, over the first
    rope_dim dims of each head (the rest pass through), cos and sin times mscale.
    inv_freq: [r/2], or [T, r/2] (one row per position).
    layout "half": pairs (i, i + r/2) (HF rotate_half); "interleaved": pairs (2i, 2i+1)."""
    r = rope_dim or x.shape[-1]
    if r < x.shape[-1]:
        return np.concatenate([apply_rope(x[..., :r], positions, inv_freq, layout, None, mscale), x[..., r:]],
                              axis=-1)
    inv_freq = np.asarray(inv_freq)
    ang = positions[:, None] * inv_freq if inv_freq.ndim == 2 else np.outer(positions, inv_freq)  # [T, d/2]
    cos, sin = mscale * np.cos(ang)[:, None, :], mscale * np.sin(ang)[:, None, :]
    d = x.shape[-1]
    if layout == "half":
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = b * cos + a * sin
    return out


def rms_norm(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def layer_norm(x, g, b, eps):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def causal_attention(q, k, v, window=None):
    """q [T, H, d], k/v [T, H_kv, d] -> [T, H*d]; query head j uses KV head j // (H/H_kv).
    window W: query t sees keys s with t - W < s <= t (None: all s <= t)."""
    t, h, d = q.shape
    group = h // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("thd,shd->hts", q, k) / math.sqrt(d)
    qi, si = np.arange(t)[:, None], np.arange(t)[None, :]
    visible = si <= qi
    if window:
        visible &= si > qi - window
    scores = np.where(visible[None], scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hts,shd->thd", p, v).reshape(t, h * d)


class ReferenceModel:
    """A model from an HF config dict and {HF name: array} weights, computed in float64."""

    def __init__(self, config, weights, rope_layout="half", act_quant=False):
        """act_quant: round the input of every linear layer as llmserve's int8 kernels do
        (quants.quantize_activations), to follow the arithmetic of quantized weights."""
        self.c = config
        self.w = {n: np.asarray(a, dtype=np.float64) for n, a in weights.items()}
        self.rope_layout = rope_layout
        self.act_quant = act_quant
        self.act_scale = 1.0  # with act_quant: scales each rounded input (a sensitivity probe)
        arch = config["architectures"][0]
        self.gpt2 = arch == "GPT2LMHeadModel"
        if self.gpt2:
            self.dim, self.layers, self.heads = config["n_embd"], config["n_layer"], config["n_head"]
            self.kv_heads = self.heads
            self.eps = config.get("layer_norm_epsilon", 1e-5)
            self.tied = config.get("tie_word_embeddings", True)
        else:
            self.dim, self.layers = config["hidden_size"], config["num_hidden_layers"]
            self.heads = config["num_attention_heads"]
            self.kv_heads = config.get("num_key_value_heads") or self.heads
            self.eps = config.get("rms_norm_eps", 1e-6)
            self.tied = config.get("tie_word_embeddings", False)
        self.head_dim = config.get("head_dim") or self.dim // self.heads
        self.qk_norm = arch == "Qwen3ForCausalLM"
        self.phi3 = arch == "Phi3ForCausalLM"
        self.rope_dim = int(self.head_dim * config.get("partial_rotary_factor", 1.0))
        self.longrope = None  # (short inv_freq, long inv_freq, L0, attention factor)
        if not self.gpt2:
            scaling = config.get("rope_scaling")
            theta = config.get("rope_theta", 10000.0)
            kind = (scaling or {}).get("rope_type", (scaling or {}).get("type"))
            if kind in ("longrope", "su"):
                base = 1.0 / theta ** (np.arange(0, self.rope_dim, 2, dtype=np.float64) / self.rope_dim)
                l0 = scaling.get("original_max_position_embeddings") or config["original_max_position_embeddings"]
                s = config["max_position_embeddings"] / l0
                attn = scaling.get("attention_factor") or (math.sqrt(1 + math.log(s) / math.log(l0)) if s > 1 else 1.0)
                self.longrope = (base / np.asarray(scaling["short_factor"], dtype=np.float64),
                                 base / np.asarray(scaling["long_factor"], dtype=np.float64), l0, attn)
            else:
                self.inv_freq = rope_inv_freq(self.rope_dim, theta, scaling)
        self.windows = [self._window(config, arch, i) for i in range(self.layers)]
        self.eos_id = config.get("eos_token_id")

    @staticmethod
    def _window(config, arch, layer):
        """The sliding window of `layer` by HF's configs, or None."""
        if arch in ("MistralForCausalLM", "Phi3ForCausalLM"):
            return config.get("sliding_window")
        if arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM") and config.get("use_sliding_window"):
            types = config.get("layer_types")
            sliding = (types[layer] == "sliding_attention" if types
                       else layer >= config.get("max_window_layers", 28))
            return config.get("sliding_window") if sliding else None
        return None

    def _rope(self, x, pos):
        """RoPE of x [T, heads, d] at positions pos (float64 [T])."""
        if self.longrope is None:
            return apply_rope(x, pos, self.inv_freq, self.rope_layout, self.rope_dim)
        short, long_, l0, attn = self.longrope
        inv = np.where((pos + 1 > l0)[:, None], long_[None, :], short[None, :])  # per token: p + 1 > L0 -> long
        return apply_rope(x, pos, inv, self.rope_layout, self.rope_dim, attn)

    @classmethod
    def from_hf_dir(cls, directory, round_dtype=None):
        """Loads config.json and the safetensors; round_dtype rounds every tensor first."""
        with open(os.path.join(directory, "config.json")) as f:
            config = json.load(f)
        weights = formats.read_hf_tensors(directory)
        if round_dtype:
            weights = {n: formats.round_to(a, round_dtype) for n, a in weights.items()}
        return cls(config, weights)

    @classmethod
    def from_gguf(cls, path, act_quant=False):
        """A Llama-architecture GGUF (F32/F16/BF16 or quantized tensors, dequantized in
        float64): its Q/K rows stay permuted as llama.cpp's converter stores them, so RoPE
        pairs interleaved dimensions."""
        kv, tensors = quants.read_gguf_dequantized(path)
        if kv["general.architecture"][1] != "llama":
            raise ValueError("%s: only llama GGUFs" % path)
        get = lambda k, default=None: kv[k][1] if k in kv else default  # noqa: E731
        config = {"architectures": ["LlamaForCausalLM"], "hidden_size": get("llama.embedding_length"),
                  "num_hidden_layers": get("llama.block_count"), "num_attention_heads": get("llama.attention.head_count"),
                  "num_key_value_heads": get("llama.attention.head_count_kv"),
                  "rms_norm_eps": get("llama.attention.layer_norm_rms_epsilon"),
                  "rope_theta": get("llama.rope.freq_base", 10000.0),
                  "tie_word_embeddings": "output.weight" not in tensors,
                  "eos_token_id": get("tokenizer.ggml.eos_token_id")}
        names = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                 "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}
        top = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
               "output.weight": "lm_head.weight"}
        weights = {}
        for name, a in tensors.items():
            if name in top:
                weights[top[name]] = a
            elif name.startswith("blk."):
                _, layer, module, param = name.split(".")
                weights["model.layers.%s.%s.%s" % (layer, names[module], param)] = a
        return cls(config, weights, rope_layout="interleaved", act_quant=act_quant)

    def _bias(self, name, n):
        return self.w.get(name, np.zeros(n))

    def _in(self, x):
        """The input of a linear layer, as the arithmetic being followed sees it."""
        return quants.quantize_activations(x * self.act_scale) if self.act_quant else x

    def logits(self, ids):
        """Logits [T, vocab] at every position of token ids `ids` (positions 0..T-1)."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.gpt2:
            return self._gpt2(ids)
        return self._llama(ids)

    def _llama(self, ids):
        w, t, hd = self.w, len(ids), self.head_dim
        pos = np.arange(t, dtype=np.float64)
        x = w["model.embed_tokens.weight"][ids]
        for i in range(self.layers):
            p = "model.layers.%d." % i
            h = self._in(rms_norm(x, w[p + "input_layernorm.weight"], self.eps))
            nq, nkv = self.heads * hd, self.kv_heads * hd
            if self.phi3:  # rows of qkv_proj: q | k | v
                qkv = h @ w[p + "self_attn.qkv_proj.weight"].T
                q, k, v = qkv[:, :nq], qkv[:, nq:nq + nkv], qkv[:, nq + nkv:]
            else:
                q = h @ w[p + "self_attn.q_proj.weight"].T + self._bias(p + "self_attn.q_proj.bias", nq)
                k = h @ w[p + "self_attn.k_proj.weight"].T + self._bias(p + "self_attn.k_proj.bias", nkv)
                v = h @ w[p + "self_attn.v_proj.weight"].T + self._bias(p + "self_attn.v_proj.bias", nkv)
            q, k = q.reshape(t, self.heads, hd), k.reshape(t, self.kv_heads, hd)
            if self.qk_norm:  # Qwen3: per head, before RoPE
                q = rms_norm(q, w[p + "self_attn.q_norm.weight"], self.eps)
                k = rms_norm(k, w[p + "self_attn.k_norm.weight"], self.eps)
            q, k = self._rope(q, pos), self._rope(k, pos)
            a = causal_attention(q, k, v.reshape(t, self.kv_heads, hd), self.windows[i])
            x = x + self._in(a) @ w[p + "self_attn.o_proj.weight"].T
            h = self._in(rms_norm(x, w[p + "post_attention_layernorm.weight"], self.eps))
            if self.phi3:  # rows of gate_up_proj: gate | up (HF: gate, up = chunk(2))
                gu = h @ w[p + "mlp.gate_up_proj.weight"].T
                f = gu.shape[1] // 2
                m = silu(gu[:, :f]) * gu[:, f:]
            else:
                m = silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)
            x = x + self._in(m) @ w[p + "mlp.down_proj.weight"].T
        x = self._in(rms_norm(x, w["model.norm.weight"], self.eps))
        head = w["model.embed_tokens.weight"] if self.tied else w["lm_head.weight"]
        return x @ head.T

    def _gpt2(self, ids):
        w, t, d, hd = self.w, len(ids), self.dim, self.head_dim
        x = w["wte.weight"][ids] + w["wpe.weight"][np.arange(t)]
        for i in range(self.layers):
            p = "h.%d." % i
            h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], self.eps)
            qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = (qkv[:, j * d:(j + 1) * d].reshape(t, self.heads, hd) for j in range(3))
            x = x + causal_attention(q, k, v) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], self.eps)
            m = gelu_tanh(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
            x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], self.eps)
        head = w["wte.weight"] if self.tied else w["lm_head.weight"]
        return x @ head.T

    def greedy(self, ids, max_tokens, eos_id=None):
        """Greedy continuation: (generated ids, top1 - top2 logit gap at each step, the
        last-position logits of the prompt). Stops after EOS (which is included)."""
        eos_id = self.eos_id if eos_id is None else eos_id
        seq, gen, gaps, first = list(ids), [], [], None
        for _ in range(max_tokens):
            last = self.logits(seq)[-1]
            if first is None:
                first = last
            top2 = np.sort(last)[-2:]
            tok = int(np.argmax(last))
            gen.append(tok)
            gaps.append(float(top2[1] - top2[0]))
            seq.append(tok)
            if tok == eos_id:
                break
        if first is None:
            first = self.logits(seq)[-1]
        return gen, gaps, first


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="HF directory (config.json + safetensors)")
    ap.add_argument("--prompt-ids", action="append", required=True, help="comma-separated token ids")
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--all-positions", action="store_true", help="print logits at every position")
    args = ap.parse_args()
    model = ReferenceModel.from_hf_dir(args.model)
    for spec in args.prompt_ids:
        ids = [int(s) for s in spec.split(",") if s]
        gen, gaps, last = model.greedy(ids, args.max_tokens)
        out = {"prompt_ids": ids, "generated_ids": gen, "gaps": gaps}
        out["logits"] = model.logits(ids).tolist() if args.all_positions else last.tolist()
        print(json.dumps(out))


if __name__ == "__main__":
    main()
