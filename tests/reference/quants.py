#!/usr/bin/python3
"""ggml's quantized block formats for the Python reference, written from the block layouts
(ggml-common.h's structs, as described in ggml's docs): dequantization of Q4_0, Q4_1, Q5_0,
Q5_1, Q8_0, Q4_K, Q5_K and Q6_K, random blocks of each, a reader of GGUF files holding
them, and the int8 activation quantization llmserve's kernels apply (model/quant/quant_gemm.h)
so that the reference can follow the same arithmetic.

Nothing here shares code with the C++ side: these are the independent half of the checks.
"""

import numpy as np

import formats

# ggml type id -> (name, elements per block, bytes per block)
TYPES = {2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24),
         8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210)}
TYPE_ID = {name: i for i, (name, _, _) in TYPES.items()}


def _f16(b, off):
    """The f16 at byte `off` of every block row of `b` [n, bytes], as float64 [n, 1]."""
    return b[:, off:off + 2].copy().view("<f2").astype(np.float64)


def _nibbles32(qs):
    """[n, 16] bytes -> [n, 32] codes: element j < 16 the low nibble of byte j, else the high of j - 16."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int64)


def _bits32(qh):
    """[n, 4] bytes (a little-endian u32) -> [n, 32] bits, bit j of the u32 for element j."""
    u = qh.copy().view("<u4").astype(np.int64)  # [n, 1]
    return (u >> np.arange(32)) & 1


def _scale_min_k4(s):
    """Q4_K/Q5_K's 12 bytes [n, 12] -> (scales [n, 8], mins [n, 8]) of 6 bits each."""
    s = s.astype(np.int64)
    sc = np.empty((s.shape[0], 8), dtype=np.int64)
    mn = np.empty_like(sc)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, mn


def dequantize(type_name, raw, shape):
    """float64 array of `shape` (the last dimension along the blocks) from the blocks `raw`."""
    tid = TYPE_ID[type_name]
    _, elems, nbytes = TYPES[tid]
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, nbytes)
    if type_name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        d = _f16(b, 0)
        has_min = type_name.endswith("_1")
        m = _f16(b, 2) if has_min else 0.0
        qh_off = 4 if has_min else 2
        q = _nibbles32(b[:, qh_off + (4 if type_name.startswith("Q5") else 0):][:, :16])
        if type_name.startswith("Q5"):
            q = q | (_bits32(b[:, qh_off:qh_off + 4]) << 4)
        if has_min:
            out = q * d + m
        else:
            out = (q - (16 if type_name == "Q5_0" else 8)) * d
    elif type_name == "Q8_0":
        d = _f16(b, 0)
        out = b[:, 2:34].view(np.int8).astype(np.int64) * d
    elif type_name in ("Q4_K", "Q5_K"):
        d, dmin = _f16(b, 0), _f16(b, 2)
        sc, mn = _scale_min_k4(b[:, 4:16])
        qs = b[:, 16:144] if type_name == "Q4_K" else b[:, 48:176]
        # sub-block s (32 elements): nibbles of bytes 32 (s // 2) .. + 32, low for even s, high for odd.
        q = np.empty((b.shape[0], 8, 32), dtype=np.int64)
        for s in range(8):
            chunk = qs[:, 32 * (s // 2):32 * (s // 2) + 32].astype(np.int64)
            q[:, s] = (chunk & 0x0F) if s % 2 == 0 else (chunk >> 4)
        if type_name == "Q5_K":
            qh = b[:, 16:48].astype(np.int64)  # element l of sub-block s: bit s of qh[l]
            for s in range(8):
                q[:, s] |= ((qh >> s) & 1) << 4
        out = (d[:, :, None] * sc[:, :, None]) * q - (dmin[:, :, None] * mn[:, :, None])
    elif type_name == "Q6_K":
        ql, qh = b[:, 0:128].astype(np.int64), b[:, 128:192].astype(np.int64)
        sc = b[:, 192:208].view(np.int8).astype(np.int64)
        d = _f16(b, 208)
        q = np.empty((b.shape[0], 256), dtype=np.int64)
        for half in range(2):
            for quarter in range(4):
                lo = ql[:, 64 * half + 32 * (quarter % 2):64 * half + 32 * (quarter % 2) + 32]
                nib = (lo & 0x0F) if quarter < 2 else (lo >> 4)
                hi = (qh[:, 32 * half:32 * half + 32] >> (2 * quarter)) & 3
                q[:, 128 * half + 32 * quarter:128 * half + 32 * quarter + 32] = nib | (hi << 4)
        out = (d * np.repeat(sc, 16, axis=1)) * (q - 32)
    else:
        raise ValueError("unknown type %r" % type_name)
    return out.reshape(shape)


# Per type: (f16 field offsets, range of d, dmin or m as a multiple of d): scales that make
# the dequantized weights of a trained model's size (standard deviation about 0.02) and,
# for the formats with a min, roughly centred on zero.
_RANDOM_SCALES = {"Q4_0": ([0], (2e-3, 6e-3), None), "Q5_0": ([0], (1e-3, 3e-3), None),
                  "Q8_0": ([0], (1.5e-4, 4e-4), None), "Q4_1": ([0, 2], (2e-3, 6e-3), -7.5),
                  "Q5_1": ([0, 2], (1e-3, 3e-3), -15.5), "Q4_K": ([0, 2], (5e-5, 1.5e-4), 7.5),
                  "Q5_K": ([0, 2], (2.5e-5, 7.5e-5), 15.5), "Q6_K": ([208], (1e-5, 2e-5), None)}


def random_blocks(type_name, rows, cols, rng):
    """Random blocks for `rows` x `cols` elements of `type_name`: random quant bits and
    sub-block codes, the f16 scales as _RANDOM_SCALES gives them."""
    tid = TYPE_ID[type_name]
    _, elems, nbytes = TYPES[tid]
    n = rows * cols // elems
    b = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    offsets, (lo, hi), m_ratio = _RANDOM_SCALES[type_name]
    d = rng.uniform(lo, hi, size=(n, 1))
    b[:, offsets[0]:offsets[0] + 2] = d.astype("<f2").view(np.uint8)
    if m_ratio is not None:
        m = d * m_ratio * rng.uniform(0.9, 1.1, size=(n, 1))
        b[:, offsets[1]:offsets[1] + 2] = m.astype("<f2").view(np.uint8)
    return b.tobytes()


def read_gguf_dequantized(path):
    """(kv, {name: float64 array}) of a GGUF file whose tensors are F32/F16/BF16 or of TYPES."""
    kv, infos = formats.read_gguf(path, load_tensors=False)
    with open(path, "rb") as f:
        blob = f.read()
    # The data section starts after the header, at the alignment: the first tensor's offset 0.
    alignment = kv.get("general.alignment", (formats.GGUF_U32, 32))[1]
    end = _header_end(blob, len(infos), len(kv))
    base = end + (-end % alignment)
    out = {}
    for name, t in infos.items():
        start = base + t["offset"]
        dtype = t["dtype"]
        if dtype in formats.ITEMSIZE:
            n = formats.numel(t["shape"]) * formats.ITEMSIZE[dtype]
            out[name] = formats.decode(blob[start:start + n], dtype, t["shape"])
        else:
            tname, elems, nbytes = TYPES[dtype]
            n = formats.numel(t["shape"]) // elems * nbytes
            out[name] = dequantize(tname, blob[start:start + n], t["shape"])
    return kv, out


def _header_end(blob, n_tensors, n_kv):
    """Byte offset just past the tensor infos (re-walking the header)."""
    r = formats._Reader(blob)
    r.take("4s")
    r.take("<IQQ")
    for _ in range(n_kv):
        r.string()
        r.value(r.take("<I"))
    for _ in range(n_tensors):
        r.string()
        n_dims = r.take("<I")
        for _ in range(n_dims):
            r.take("<Q")
        r.take("<IQ")
    return r.pos


def quantize_activations(x):
    """x [..., k] rounded as llmserve's kernels quantize activations: per 32 along k
    (zero-padded), d = max|x| / 127 (float32), q = round-half-even(x * (1 / d)) (float32
    products), value q * d. Returns float64."""
    x = np.asarray(x, dtype=np.float32)
    k = x.shape[-1]
    pad = -k % 32
    xp = np.concatenate([x, np.zeros(x.shape[:-1] + (pad,), dtype=np.float32)], axis=-1) if pad else x
    blocks = xp.reshape(xp.shape[:-1] + (-1, 32))
    amax = np.max(np.abs(blocks), axis=-1, keepdims=True)
    d = (amax / np.float32(127.0)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    q = np.rint((blocks * inv).astype(np.float32))
    out = (q.astype(np.float64) * d.astype(np.float64)).reshape(xp.shape)
    return out[..., :k]
