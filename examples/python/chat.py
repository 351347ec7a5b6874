#!/usr/bin/env python3
"""A terminal chat with an llmserve server (a minimal Python gRPC client of chat inputs).

Each line you type is a user turn; the whole conversation is sent as a GenerateRequest
`chat` input, which the server renders with the model's chat template (or its
--chat-template), and the reply streams back and joins the history. Needs what
generate.py needs (python3-grpcio, protoc and grpc_python_plugin; scripts/install-deps.sh).

    examples/python/chat.py [--addr HOST:PORT] [--system TEXT] [--max-tokens N]
                            [--temperature T] [--seed S] [--show-prompt]

"/reset" forgets the history; "/exit" or end of input quits. With --show-prompt each
rendered prompt (ApplyChatTemplate) is printed to stderr first.
"""
import argparse
import os
import sys
import tempfile

import grpc

from generate import load_stubs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--addr", default=os.environ.get("LLMSERVE_ADDR", "127.0.0.1:50051"))
    parser.add_argument("--system", help="a system message opening the conversation")
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--show-prompt", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as stub_dir:
        pb, pb_grpc = load_stubs(stub_dir)
        history = []

        def reset():
            history.clear()
            if args.system:
                history.append(pb.ChatMessage(role="system", content=args.system))

        reset()
        with grpc.insecure_channel(args.addr) as channel:
            stub = pb_grpc.LlmServiceStub(channel)
            for line in sys.stdin:
                line = line.rstrip("\n")
                if line in ("/exit", "/quit"):
                    break
                if line == "/reset":
                    reset()
                    continue
                if not line:
                    continue
                history.append(pb.ChatMessage(role="user", content=line))
                chat = pb.ChatInput(messages=history)
                if args.show_prompt:
                    rendered = stub.ApplyChatTemplate(pb.ApplyChatTemplateRequest(chat=chat))
                    print(f"[prompt, {len(rendered.ids)} tokens]\n{rendered.text}\n[end of prompt]", file=sys.stderr)
                request = pb.GenerateRequest(chat=chat)
                if args.max_tokens is not None:
                    request.max_tokens = args.max_tokens
                if args.temperature is not None:
                    request.temperature = args.temperature
                if args.seed is not None:
                    request.seed = args.seed
                reply = []
                try:
                    for response in stub.Generate(request):
                        if response.HasField("chunk"):
                            reply.append(response.chunk.text)
                            sys.stdout.write(response.chunk.text)
                            sys.stdout.flush()
                        else:
                            reason = pb.FinishReason.Name(response.final.finish_reason).removeprefix("FINISH_REASON_")
                            print(f"\n[{reason}, {response.final.usage.completion_tokens} tokens]", file=sys.stderr)
                except grpc.RpcError as err:
                    print(f"{err.code().name}: {err.details()}", file=sys.stderr)
                    history.pop()
                    return 1
                history.append(pb.ChatMessage(role="assistant", content="".join(reply)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
