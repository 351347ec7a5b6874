#!/usr/bin/python3
"""Low-level file formats for the Python reference: f16/bf16 rounding, safetensors and
GGUF v3, written from the format specifications (huggingface/safetensors README,
ggml docs/gguf.md). Writers stream tensor by tensor, so a multi-GB checkpoint never has
to sit in memory.

Nothing here shares code with the C++ loaders: these files are the independent side
of the comparison.
"""

import json
import os
import struct

import numpy as np

# ---- Element types ---------------------------------------------------------------

DTYPES = ("f32", "f16", "bf16")
SAFETENSORS_DTYPE = {"f32": "F32", "f16": "F16", "bf16": "BF16"}
GGML_TYPE = {"f32": 0, "f16": 1, "bf16": 30}  # ggml.h: GGML_TYPE_F32/F16/BF16
GGML_TYPE_NAME = {v: k for k, v in GGML_TYPE.items()}
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2}


def bf16_bits(a):
    """float32 array -> uint16 bf16 bit patterns, rounding to nearest, ties to even."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32)
    # Only NaN bit patterns can wrap around 2^32 here; they are fixed below.
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if np.any(nan):  # keep NaNs NaN (quiet) instead of rounding them into infinities
        rounded[nan] = ((u[nan] >> 16) | 0x0040).astype(np.uint16)
    return rounded


def bf16_bits_to_f32(bits):
    """uint16 bf16 bit patterns -> float32."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_to(a, dtype):
    """The float32 array whose values are `a` rounded to `dtype` (f32 leaves it alone)."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "f32":
        return a
    if dtype == "f16":
        return a.astype(np.float16).astype(np.float32)  # numpy rounds to nearest even
    if dtype == "bf16":
        return bf16_bits_to_f32(bf16_bits(a))
    raise ValueError("unknown dtype %r" % dtype)


def encode(a, dtype):
    """Little-endian bytes of `a` stored as `dtype`."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    if dtype == "f32":
        return a.astype("<f4").tobytes()
    if dtype == "f16":
        return a.astype("<f2").tobytes()
    if dtype == "bf16":
        return bf16_bits(a).astype("<u2").tobytes()
    raise ValueError("unknown dtype %r" % dtype)


def decode(buf, dtype, shape):
    """float64 array of `shape` from little-endian `dtype` bytes."""
    if dtype == "f32":
        a = np.frombuffer(buf, dtype="<f4")
    elif dtype == "f16":
        a = np.frombuffer(buf, dtype="<f2")
    elif dtype == "bf16":
        a = bf16_bits_to_f32(np.frombuffer(buf, dtype="<u2"))
    else:
        raise ValueError("unknown dtype %r" % dtype)
    return a.astype(np.float64).reshape(shape)


def numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


# ---- safetensors --------------------------------------------------------------------
# File: u64 LE header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
# then the data; offsets are relative to the end of the header.


class SafetensorsWriter:
    """Writes one .safetensors file: the header up front, then each tensor in order."""

    def __init__(self, path, entries, metadata=None):
        """entries: list of (name, shape, dtype) in file order."""
        self._entries = list(entries)
        header = {"__metadata__": dict(metadata or {"format": "pt"})}
        offset = 0
        for name, shape, dtype in self._entries:
            nbytes = numel(shape) * ITEMSIZE[dtype]
            header[name] = {"dtype": SAFETENSORS_DTYPE[dtype], "shape": [int(d) for d in shape],
                            "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
        text = json.dumps(header, separators=(",", ":")).encode("utf-8")
        text += b" " * (-len(text) % 8)  # data starts 8-aligned, as the reference writer does
        self.total_bytes = offset
        self._f = open(path, "wb")
        self._f.write(struct.pack("<Q", len(text)))
        self._f.write(text)
        self._next = 0

    def write(self, name, array):
        """Writes the next tensor; `name` must be the next entry's."""
        want, shape, dtype = self._entries[self._next]
        if name != want or tuple(array.shape) != tuple(shape):
            raise ValueError("safetensors: expected %s %s next, got %s %s" % (want, shape, name, array.shape))
        self._f.write(encode(array, dtype))
        self._next += 1

    def close(self):
        if self._next != len(self._entries):
            raise ValueError("safetensors: %d of %d tensors written" % (self._next, len(self._entries)))
        self._f.close()


def read_safetensors(path):
    """{name: float64 array} of one .safetensors file (F32/F16/BF16 only)."""
    inverse = {v: k for k, v in SAFETENSORS_DTYPE.items()}
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        out[name] = decode(blob[base + begin:base + end], inverse[e["dtype"]], e["shape"])
    return out


def read_safetensors_dtypes(path):
    """{name: dtype string} of one .safetensors file."""
    inverse = {v: k for k, v in SAFETENSORS_DTYPE.items()}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    return {k: inverse[v["dtype"]] for k, v in header.items() if k != "__metadata__"}


def read_hf_tensors(directory):
    """All tensors of an HF directory: model.safetensors, or the shards of the index."""
    single = os.path.join(directory, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(directory, "model.safetensors.index.json")) as f:
        index = json.load(f)
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        for name, a in read_safetensors(os.path.join(directory, shard)).items():
            if index["weight_map"].get(name) != shard:
                raise ValueError("%s: tensor %s not mapped to this shard" % (shard, name))
            out[name] = a
    if set(out) != set(index["weight_map"]):
        raise ValueError("%s: index and shards disagree" % directory)
    return out


# ---- GGUF v3 -------------------------------------------------------------------------
# "GGUF", u32 version, u64 n_tensors, u64 n_kv, the KV pairs, the tensor infos
# (name, u32 n_dims, u64 dims innermost first, u32 ggml type, u64 offset), padding to
# general.alignment, then the data (each tensor at an aligned offset).

GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL = range(8)
GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64 = range(8, 13)
_SCALAR = {GGUF_U8: "<B", GGUF_I8: "<b", GGUF_U16: "<H", GGUF_I16: "<h", GGUF_U32: "<I", GGUF_I32: "<i",
           GGUF_F32: "<f", GGUF_BOOL: "<?", GGUF_U64: "<Q", GGUF_I64: "<q", GGUF_F64: "<d"}


def _gguf_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _gguf_value(vtype, value):
    if vtype == GGUF_STRING:
        return _gguf_string(value)
    if vtype == GGUF_ARRAY:
        etype, items = value
        out = [struct.pack("<IQ", etype, len(items))]
        if etype in _SCALAR and etype != GGUF_BOOL and len(items) > 1000:
            out.append(np.asarray(items, dtype=_SCALAR[etype]).tobytes())
        else:
            out.extend(_gguf_value(etype, v) for v in items)
        return b"".join(out)
    return struct.pack(_SCALAR[vtype], value)


class GgufWriter:
    """Writes a GGUF v3 file: header, KV pairs and tensor infos up front, then data."""

    def __init__(self, path, kvs, tensors, alignment=32):
        """kvs: list of (key, gguf type, value); an array value is (element type, list).
        tensors: list of (name, numpy-order shape, dtype) in file order; dtype "f32", "f16",
        "bf16", or ("raw", ggml type id, bytes) for data written as given (quantized blocks)."""
        self._alignment = alignment
        self._tensors = list(tensors)
        kvs = [kv for kv in kvs if kv[0] != "general.alignment"]
        kvs.insert(0, ("general.alignment", GGUF_U32, alignment))
        head = [b"GGUF", struct.pack("<IQQ", 3, len(self._tensors), len(kvs))]
        for key, vtype, value in kvs:
            head += [_gguf_string(key), struct.pack("<I", vtype), _gguf_value(vtype, value)]
        offset = 0
        for name, shape, dtype in self._tensors:
            dims = [int(d) for d in reversed(shape)]  # ne[0] is the innermost (contiguous) dim
            raw = isinstance(dtype, tuple)
            head += [_gguf_string(name), struct.pack("<I", len(dims)), struct.pack("<%dQ" % len(dims), *dims),
                     struct.pack("<IQ", dtype[1] if raw else GGML_TYPE[dtype], offset)]
            offset += dtype[2] if raw else numel(shape) * ITEMSIZE[dtype]
            offset += -offset % alignment
        blob = b"".join(head)
        self._f = open(path, "wb")
        self._f.write(blob + b"\0" * (-len(blob) % alignment))
        self._next = 0

    def write(self, name, array):
        """Writes the next tensor's data (converted to its dtype) and the padding after it."""
        want, shape, dtype = self._tensors[self._next]
        if isinstance(dtype, tuple):
            if name != want or len(array) != dtype[2]:
                raise ValueError("gguf: expected %s (%d bytes) next, got %s" % (want, dtype[2], name))
            data = bytes(array)
        elif name != want or tuple(array.shape) != tuple(shape):
            raise ValueError("gguf: expected %s %s next, got %s %s" % (want, shape, name, array.shape))
        else:
            data = encode(array, dtype)
        self._f.write(data)
        self._f.write(b"\0" * (-len(data) % self._alignment))
        self._next += 1

    def close(self):
        if self._next != len(self._tensors):
            raise ValueError("gguf: %d of %d tensors written" % (self._next, len(self._tensors)))
        self._f.close()


class _Reader:
    def __init__(self, blob):
        self.blob, self.pos = blob, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.blob, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("<Q")
        s = self.blob[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8")

    def value(self, vtype):
        if vtype == GGUF_STRING:
            return self.string()
        if vtype == GGUF_ARRAY:  # (element type, items), the form GgufWriter takes
            etype, n = self.take("<IQ")
            return (etype, [self.value(etype) for _ in range(n)])
        return self.take(_SCALAR[vtype])


def read_gguf(path, load_tensors=True):
    """(kv {key: (type, value)}, tensors {name: dict(shape, dtype, offset[, data])});
    an array value is (element type, items)."""
    with open(path, "rb") as f:
        blob = f.read()
    r = _Reader(blob)
    if r.take("4s") != b"GGUF":
        raise ValueError("%s: not a GGUF file" % path)
    version, n_tensors, n_kv = r.take("<IQQ")
    if version != 3:
        raise ValueError("%s: GGUF version %d" % (path, version))
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        vtype = r.take("<I")
        kv[key] = (vtype, r.value(vtype))
    tensors = {}
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        dims = [r.take("<Q") for _ in range(n_dims)]
        ggml_type, offset = r.take("<IQ")
        tensors[name] = {"shape": list(reversed(dims)), "dtype": GGML_TYPE_NAME.get(ggml_type, ggml_type),
                         "offset": offset}
    alignment = kv.get("general.alignment", (GGUF_U32, 32))[1]
    base = r.pos + (-r.pos % alignment)
    for name, t in tensors.items():
        if t["offset"] % alignment:
            raise ValueError("%s: tensor %s misaligned" % (path, name))
        if load_tensors:
            start = base + t["offset"]
            t["data"] = decode(blob[start:start + numel(t["shape"]) * ITEMSIZE[t["dtype"]]], t["dtype"], t["shape"])
    return kv, tensors
