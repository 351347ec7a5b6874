#!/usr/bin/env python3
"""Streams one completion from an llmserve server (a minimal Python gRPC client).

Needs Debian's python3-grpcio (and python3-protobuf, which it pulls in) plus protoc and
grpc_python_plugin from protobuf-compiler / protobuf-compiler-grpc; all are installed by
scripts/install-deps.sh. The Python stubs are generated from proto/ into a temporary
directory at start-up, so nothing generated is kept in the repository.

    examples/python/generate.py [--addr HOST:PORT] [--max-tokens N] [--temperature T]
                                [--seed S] [--stop S]... [--timeout SECONDS] PROMPT

The text goes to stdout as it arrives; the finish reason, usage and timings to stderr.
A non-OK status prints "CODE: message" to stderr and exits 1.
"""
import argparse
import importlib
import os
import subprocess
import sys
import tempfile

import grpc

PROTO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto")


def load_stubs(out_dir):
    """Generates llmserve/v1/llmserve_pb2{,_grpc}.py into out_dir and imports them."""
    subprocess.run(
        ["protoc", f"--proto_path={PROTO_ROOT}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}",
         "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
         os.path.join(PROTO_ROOT, "llmserve", "v1", "llmserve.proto")],
        check=True)
    sys.path.insert(0, out_dir)
    return (importlib.import_module("llmserve.v1.llmserve_pb2"),
            importlib.import_module("llmserve.v1.llmserve_pb2_grpc"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prompt")
    parser.add_argument("--addr", default=os.environ.get("LLMSERVE_ADDR", "127.0.0.1:50051"))
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--stop", action="append", default=[])
    parser.add_argument("--timeout", type=float, help="deadline in seconds")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as stub_dir:
        pb, pb_grpc = load_stubs(stub_dir)
        request = pb.GenerateRequest(text=args.prompt, stop=args.stop)
        # Optional fields: set only what was given, so the server's defaults apply otherwise.
        if args.max_tokens is not None:
            request.max_tokens = args.max_tokens
        if args.temperature is not None:
            request.temperature = args.temperature
        if args.seed is not None:
            request.seed = args.seed

        with grpc.insecure_channel(args.addr) as channel:
            stub = pb_grpc.LlmServiceStub(channel)
            try:
                for response in stub.Generate(request, timeout=args.timeout):
                    if response.HasField("chunk"):
                        sys.stdout.write(response.chunk.text)
                        sys.stdout.flush()
                    else:
                        final = response.final
                        reason = pb.FinishReason.Name(final.finish_reason).removeprefix("FINISH_REASON_")
                        print()
                        print(f"finish_reason={reason} prompt_tokens={final.usage.prompt_tokens} "
                              f"completion_tokens={final.usage.completion_tokens} "
                              f"ttft={final.timings.time_to_first_token_seconds:.3f}s "
                              f"total={final.timings.total_seconds:.3f}s seed={final.seed}", file=sys.stderr)
            except grpc.RpcError as err:
                print(f"{err.code().name}: {err.details()}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
