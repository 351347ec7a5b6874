#!/usr/bin/python3
"""Writes the fuzz targets' seed corpus, tests/fuzz/corpus/<target>/, from synthetic
models and requests (every file a few KiB, so that the mutator spends its time on
structure, not on bulk weights). The files are committed; run this again only to change
them:  /usr/bin/python3 tests/fuzz/make_corpus.py

The seeds made from the shared assets (real checkpoints, tokenizers, chat templates) are
assembled at run time by scripts/fuzz-test.sh, never copied into the repository.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))

import checkpoints  # noqa: E402
import formats  # noqa: E402
import quants  # noqa: E402

F = formats
OUT = os.path.join(HERE, "corpus")


def out_path(target, name):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def tiny_spec(arch="llama", vocab=258):
    return checkpoints.ModelSpec(name="fuzz-" + arch, arch=arch, hidden_size=32, num_layers=1, num_heads=2,
                                 num_kv_heads=1, ffn_dim=64, vocab_size=vocab, context_length=64)


# ---- GGUF ------------------------------------------------------------------------------

def gguf_quant_model(path, rng):
    """A llama GGUF whose linear layers use each 32-element block type, with the byte-level
    BPE tokenizer in its metadata: a file LoadGgufModel accepts."""
    spec = tiny_spec()
    types = {"token_embd.weight": "Q8_0", "blk.0.attn_q.weight": "Q4_0", "blk.0.attn_k.weight": "Q4_1",
             "blk.0.attn_v.weight": "Q5_0", "blk.0.attn_output.weight": "Q5_1",
             "blk.0.ffn_gate.weight": "Q8_0", "blk.0.ffn_up.weight": "Q4_0", "blk.0.ffn_down.weight": "Q8_0",
             "output.weight": "Q8_0"}
    shapes = [(checkpoints.gguf_name(spec, n), s) for n, s in checkpoints.hf_tensor_shapes(spec)]
    tensors, data = [], {}
    for name, shape in shapes:
        if name in types:
            blob = quants.random_blocks(types[name], shape[0], shape[1], rng)
            tensors.append((name, shape, ("raw", quants.TYPE_ID[types[name]], len(blob))))
            data[name] = blob
        else:
            tensors.append((name, shape, "f32"))
            data[name] = np.ones(shape, dtype=np.float32)
    kvs = checkpoints.gguf_hparams(spec, "f32") + checkpoints.byte_tokenizer_gguf_kvs(spec)
    w = F.GgufWriter(path, kvs, tensors)
    for name, _ in shapes:
        w.write(name, data[name])
    w.close()


def gguf_kquants(path, rng):
    """No model: two rows of each K-quant type and a SentencePiece vocabulary, for the
    container parser, the tokenizer from GGUF metadata and the super-block dequantizers."""
    pieces = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "\u2581a", "ab", "<0x0A>", "<0xC3>", "<0xA9>"]
    kvs = [("general.architecture", F.GGUF_STRING, "llama"),
           ("tokenizer.ggml.model", F.GGUF_STRING, "llama"),
           ("tokenizer.ggml.tokens", F.GGUF_ARRAY, (F.GGUF_STRING, pieces)),
           ("tokenizer.ggml.scores", F.GGUF_ARRAY, (F.GGUF_F32, [0.0, 0.0, 0.0, -1.0, -2.0, -2.0, -0.5, -1.5,
                                                                  0.0, 0.0, 0.0])),
           ("tokenizer.ggml.token_type", F.GGUF_ARRAY, (F.GGUF_I32, [2, 3, 3, 1, 1, 1, 1, 1, 6, 6, 6])),
           ("tokenizer.ggml.bos_token_id", F.GGUF_U32, 1), ("tokenizer.ggml.eos_token_id", F.GGUF_U32, 2),
           ("tokenizer.ggml.unknown_token_id", F.GGUF_U32, 0)]
    tensors, blobs = [], []
    for t in ("Q4_K", "Q5_K", "Q6_K"):
        blob = quants.random_blocks(t, 2, 256, rng)
        tensors.append(("extra.%s" % t.lower(), (2, 256), ("raw", quants.TYPE_ID[t], len(blob))))
        blobs.append(blob)
    w = F.GgufWriter(path, kvs, tensors)
    for (name, _, _), blob in zip(tensors, blobs):
        w.write(name, blob)
    w.close()


# ---- HF directory, llama2.c ------------------------------------------------------------

def hf_model(path, arch, rng):
    """config.json, a NUL byte, then model.safetensors (f16), as the target reads them."""
    spec = checkpoints.ModelSpec(name="fuzz", arch=arch, hidden_size=8, num_layers=1, num_heads=2,
                                 num_kv_heads=1 if arch != "gpt2" else 2, ffn_dim=16, vocab_size=16,
                                 context_length=16, bos_id=1, eos_id=2, tied=True)
    with tempfile.TemporaryDirectory() as d:
        checkpoints.write_hf_dir(d, spec, lambda n: rng.standard_normal(
            dict(checkpoints.hf_tensor_shapes(spec))[n]).astype(np.float32) * 0.1, dtype="f16")
        with open(os.path.join(d, "config.json"), "rb") as f:
            config = json.dumps(json.loads(f.read()), separators=(",", ":")).encode()
        with open(os.path.join(d, "model.safetensors"), "rb") as f:
            tensors = f.read()
    with open(path, "wb") as f:
        f.write(config + b"\0" + tensors)


def llama2c_model(path, rng, shared_classifier=True):
    """A llama2.c checkpoint (run.c's layout): dim 8, hidden 16, 1 layer, 2 heads, 1 KV head."""
    dim, hidden, layers, heads, kv_heads, vocab, seq = 8, 16, 1, 2, 1, 16, 8
    kv_dim = dim * kv_heads // heads
    head = dim // heads
    sizes = [vocab * dim, layers * dim, layers * dim * dim, layers * dim * kv_dim, layers * dim * kv_dim,
             layers * dim * dim, layers * dim, layers * hidden * dim, layers * dim * hidden,
             layers * hidden * dim, dim, seq * head // 2, seq * head // 2]
    if not shared_classifier:
        sizes.append(vocab * dim)
    header = struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab if shared_classifier else -vocab, seq)
    weights = (rng.standard_normal(sum(sizes)) * 0.1).astype("<f4").tobytes()
    with open(path, "wb") as f:
        f.write(header + weights)


def llama2c_tokenizer(path):
    """tokenizer.bin: max token length, then per token a score, a length and its bytes."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [bytes([b]) for b in b" abcdeo\n"] + \
        [b" a", b"ab", b"\xc3\xa9", b" once", b"<0x0A>"]
    out = [struct.pack("<i", max(len(p) for p in pieces))]
    for i, p in enumerate(pieces):
        out.append(struct.pack("<fi", -float(i), len(p)) + p)
    with open(path, "wb") as f:
        f.write(b"".join(out))


# ---- tokenizer.json --------------------------------------------------------------------

def spm_style_tokenizer_json():
    """A Llama-2-style tokenizer.json: BPE with byte fallback, the ▁ prepend/replace
    normalizer, merges and added control tokens."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "<0xC3>": 4, "<0xA9>": 5, "\u2581": 6, "a": 7, "b": 8,
             "\u2581a": 9, "ab": 10, "\u2581ab": 11}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in ((0, "<unk>"), (1, "<s>"), (2, "</s>"))]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                              {"type": "Replace", "pattern": {"String": " "},
                                                               "content": "\u2581"}]},
            "pre_tokenizer": None, "post_processor": None,
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                      "vocab": vocab, "merges": ["\u2581 a", "a b", "\u2581a b"]}}


# ---- chat templates --------------------------------------------------------------------

CONVERSATION = {"messages": [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "Hi \u00e9 {{ x }}"},
                             {"role": "assistant", "content": "Hello."},
                             {"role": "user", "content": "Again?"}],
                "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>",
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}

TEMPLATES = {
    "chatml": "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
              "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    "llama2": "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
              "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
              "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
              "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
              "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
              "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
              "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
              "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
              "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
              "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    "features": "{%- macro render(m, i=0) -%}{{ i }}:{{ m.role | upper }}={{ m.content | tojson }}{%- endmacro -%}\n"
                "{%- set ns = namespace(n=0, last='') -%}\n"
                "{%- for m in messages if m.role != 'system' -%}{%- set ns.n = ns.n + 1 -%}"
                "{{ render(m, loop.index) }}{% if not loop.last %}, {% endif %}{%- set ns.last = m.role -%}"
                "{%- endfor %}\n{{ ns.n }} {{ ns.last }} {{ tools | length }} {{ (tools[0].function.name ~ '!')|trim }}"
                "{{ messages | map(attribute='role') | join('|') }} {{ '%s-%d' % ('x', 3) }}"
                " {{ range(3) | list }} {{ {'b': 1, 'a': [1, 2.5, none, true]} | tojson }}"
                " {{ 'a,b'.split(',') }} {{ strftime_now('%Y-%m-%d') }}"
                "{% if x is defined %}{{ x }}{% elif 3 in [1, 3] %}in{% endif %}",
}


# ---- requests (protobuf wire format) ---------------------------------------------------

def request_seeds():
    """(name, bytes): a method byte (0 Generate, 1 Tokenize, 2 Detokenize) then the message."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["protoc", "-I", os.path.join(ROOT, "proto"), "--python_out", d,
                        "llmserve/v1/llmserve.proto"], check=True)
        sys.path.insert(0, d)
        from llmserve.v1 import llmserve_pb2 as pb  # noqa: E402
        g = pb.GenerateRequest(text="Once upon a time", max_tokens=8, temperature=0.7, top_p=0.9, top_k=20,
                               seed=42, stop=["\n\n"], request_id="r1", cache_salt="tenant")
        t = pb.GenerateRequest(max_tokens=4)
        t.tokens.ids.extend([1, 403, 407, 261])
        c = pb.GenerateRequest(max_tokens=4)
        c.chat.messages.add(role="system", content="Be brief.")
        c.chat.messages.add(role="user", content="Hi \u00e9")
        c.chat.tools_json = '[{"type": "function", "function": {"name": "f"}}]'
        seeds = [("generate_text", b"\0" + g.SerializeToString()),
                 ("generate_tokens", b"\0" + t.SerializeToString()),
                 ("generate_chat", b"\0" + c.SerializeToString()),
                 ("tokenize", b"\1" + pb.TokenizeRequest(text="Once upon a time \u00e9").SerializeToString()),
                 ("detokenize", b"\2" + pb.DetokenizeRequest(ids=[1, 403, 407, 261]).SerializeToString())]
        sys.path.remove(d)
    return seeds


def openai_request_seeds():
    """(name, bytes): an endpoint byte (0 Completions, 1 Chat Completions) then the JSON body."""
    completion = {"model": "m", "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9,
                  "top_k": 20, "seed": 42, "stop": ["\n\n"], "logprobs": 2, "logit_bias": {"5": -100},
                  "stop_token_ids": [2], "cache_salt": "tenant", "stream": True,
                  "stream_options": {"include_usage": True}}
    tokens = {"prompt": [1, 403, 407, 261], "max_tokens": 4}
    chat = {"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": [{"type": "text", "text": "Hi \u00e9"}]}],
            "max_completion_tokens": 4, "logprobs": True, "top_logprobs": 3,
            "tools": [{"type": "function", "function": {"name": "f"}}], "add_generation_prompt": True}
    schema = ('{"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, '
              '"age": {"type": "integer", "minimum": 0}}, "required": ["name", "age"]}')
    response_format = ('{"prompt": "x", "max_tokens": 8, "response_format": {"type": "json_schema", '
                       '"json_schema": {"name": "p", "strict": true, "schema": %s, "whitespace": "flexible"}}}' % schema)
    structured = {"messages": [{"role": "user", "content": "Hi"}],
                  "structured_outputs": {"choice": ["yes", "no"]}, "guided_regex": None, "grammar": None}
    return [("completion_text", b"\0" + json.dumps(completion).encode()),
            ("completion_tokens", b"\0" + json.dumps(tokens).encode()),
            ("chat", b"\1" + json.dumps(chat, ensure_ascii=False).encode()),
            ("response_format", b"\0" + response_format.encode()),
            ("structured_outputs", b"\1" + json.dumps(structured).encode())]


def http_request_seeds():
    """Raw HTTP/1.1 bytes for http_request_fuzzer: the first byte picks how they are cut into writes."""
    seeds = {
        "get.txt": b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
        "pipelined.txt": b"GET /a HTTP/1.1\r\n\r\nGET /stream HTTP/1.1\r\n\r\nHEAD /b HTTP/1.1\r\n\r\n",
        "post.txt": b"POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello",
        "chunked.txt": b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "expect.txt": b"POST /c HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
        "refused.txt": b"POST /refuse HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
        "http10.txt": b"GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "bad_length.txt": b"POST /c HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "both.txt": b"POST /c HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    }
    for name, raw in sorted(seeds.items()):
        for cut in (0, 7):
            yield "%d_%s" % (cut, name), bytes([cut]) + raw

# Seeds for the constraint compilers' fuzzers (GBNF, JSON Schema, regex), written as text.
CONSTRAINT_SEEDS = {
    'gbnf': {
        'arithmetic.gbnf': b'root ::= (expr "=" num "\\n")+\nexpr ::= expr [-+] term | term\nterm ::= term [*/] factor | factor\nfactor ::= num | "(" expr ")"\nnum ::= [0-9]+\n',
        'json.gbnf': b'# A JSON value, in the manner of llama.cpp\'s grammars/json.gbnf\nroot    ::= ws value ws\nvalue   ::= object | array | string | number | "true" | "false" | "null"\nobject  ::= "{" ws ( member ( "," ws member )* )? "}"\nmember  ::= string ws ":" ws value ws\narray   ::= "[" ws ( value ws ( "," ws value ws )* )? "]"\nstring  ::= "\\"" ( [^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\\""\nnumber  ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?\nws      ::= [ \\t\\n]{0,10}\n',
        'list_crlf.gbnf': b'root ::= line{1,3}\r\nline ::= "- " [^\\r\\n\\u2028]+ "\\n" # a list item\r\n',
        'repetition.gbnf': b'root ::= ("0x" [A-F0-9]{2} " "?){3,5} [ab]{4,} "c"* "d"+ "e"? ("f" "g"){0} ( [x]* )*\n',
        'unicode.gbnf': b'root ::= greeting (" " name)? "!"* .\ngreeting ::= "\xe3\x81\x93\xe3\x82\x93\xe3\x81\xab\xe3\x81\xa1\xe3\x81\xaf" | "\\u4F60\\u597D" | "\\U0001F600"\nname ::= [\xe3\x81\x81-\xe3\x82\x9fA-Za-z-]{1,8} | (\n  "x" |\n  "y"\n)\n',
    },
    'json_schema': {
        'applicators.json': b'{"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "null"}, {"enum": [1, "two", [3], {"four": 4}]}], "allOf": [{"not": {"type": "boolean"}}]}',
        'draft4_tuple.json': b'{"$schema": "http://json-schema.org/draft-04/schema#", "type": "array", "items": [{"type": "integer", "minimum": 1, "exclusiveMinimum": true}, {"type": "string", "format": "uuid"}], "additionalItems": false, "minItems": 1}',
        'object.json': b'{"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 150}, "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}, "required": ["name"]}',
        'one_of.json': b'{"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]}, {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"format": "date-time", "type": "string"}}, "required": ["kind"]}]}',
        'pattern_properties.json': b'{"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false, "minProperties": 1}',
        'recursive.json': b'{"$defs": {"node": {"type": "object", "properties": {"value": {"type": "number"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "additionalProperties": false}}, "$ref": "#/$defs/node"}',
    },
    'regex_parser': {
        'datetime': b'(?<year>\\d{4})-(?:0[1-9]|1[0-2])-\\d{2}T[^\\n]*?(Z|[+-]\\d\\d:\\d\\d)',
        'edges': b'((a|b)*c){1,3}?|x{2}y{,}|[]-a]|(?=no)',
        'email': b'^[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\\.[a-zA-Z0-9-.]+$',
        'escapes': b'[\\u0000-\\u001f"\\\\/]+\\uD83D\\uDE00|\\u{1F600}{2,3}|[^\\x00-\\x7f]?.',
        'number': b'-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?',
        'words': b'^$|(^(?:\\S+\\s+){0,9}\\S+$)',
    },
}


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    rng = np.random.default_rng(7)
    gguf_quant_model(out_path("gguf", "llama_quant.gguf"), rng)
    gguf_kquants(out_path("gguf", "kquants_spm.gguf"), rng)
    hf_model(out_path("hf_model", "llama"), "llama", rng)
    hf_model(out_path("hf_model", "gpt2"), "gpt2", rng)
    llama2c_model(out_path("llama2c", "shared_classifier.bin"), rng)
    llama2c_model(out_path("llama2c", "own_classifier.bin"), rng, shared_classifier=False)
    llama2c_tokenizer(out_path("llama2c_tokenizer", "tiny.bin"))
    with open(out_path("tokenizer_json", "byte_level.json"), "w") as f:
        json.dump(checkpoints.byte_tokenizer_json(tiny_spec()), f, ensure_ascii=False)
    with open(out_path("tokenizer_json", "spm_style.json"), "w") as f:
        json.dump(spm_style_tokenizer_json(), f, ensure_ascii=False)
    for name, source in TEMPLATES.items():
        with open(out_path("chat_template", name), "wb") as f:
            f.write(source.encode() + b"\0" + json.dumps(CONVERSATION, ensure_ascii=False).encode())
    for name, blob in request_seeds():
        with open(out_path("request", name), "wb") as f:
            f.write(blob)
    for name, blob in openai_request_seeds():
        with open(out_path("openai_request", name), "wb") as f:
            f.write(blob)
    for name, blob in http_request_seeds():
        with open(out_path("http_request", name), "wb") as f:
            f.write(blob)
    for target, files in CONSTRAINT_SEEDS.items():
        for name, blob in files.items():
            with open(out_path(target, name), "wb") as f:
                f.write(blob)
    total = 0
    for d, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(d, n)) for n in files)
    print("wrote %s: %d bytes" % (OUT, total))


if __name__ == "__main__":
    main()
