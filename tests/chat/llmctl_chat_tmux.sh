#!/usr/bin/env bash
# llmctl chat end to end on a terminal: llmserve serves stories260K with a ChatML template
# given by --chat-template; `llmctl chat` runs in a tmux pane; two user turns are typed; the
# screen must show each turn, a streamed reply and its stats line, and the second turn's
# prompt must carry the first turn's history (more prompt tokens). Prints the screen.
#
#   llmctl_chat_tmux.sh LLMSERVE LLMCTL SOURCE_DIR
# The assets are $LLMSERVE_TEST_ASSETS (relative: to SOURCE_DIR; unset: SOURCE_DIR/../shared).
# Exit 0 pass, 1 fail, 77 skip (no tmux, or the assets are missing outside CI).
set -euo pipefail
llmserve=$1; llmctl=$2; source_dir=$3
assets=${LLMSERVE_TEST_ASSETS:-../shared}
case "$assets" in /*) ;; *) assets=$source_dir/$assets ;; esac
skip() { if [ -n "${CI:-}" ] && [ "${CI}" != 0 ] && [ "${CI}" != false ]; then echo "FAIL (CI): $1"; exit 1; fi; echo "SKIP: $1"; exit 77; }
command -v tmux >/dev/null || skip "tmux is not installed (scripts/install-deps.sh installs it)"
model=$assets/models/llama2c/stories260K.bin; tok=$assets/models/llama2c/tok512.bin
[ -f "$model" ] && [ -f "$tok" ] || skip "stories260K assets not found under '$assets'"

work=$(mktemp -d); session="llmctl-chat-$$"
server_pid=""
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/chatml.jinja" <<'TEMPLATE'
{%- for message in messages -%}
{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}
TEMPLATE

port=$((20000 + RANDOM % 20000))
"$llmserve" --model "$model" --tokenizer "$tok" --chat-template "$work/chatml.jinja" --port "$port" \
  --metrics-port 0 --threads 1 --host 127.0.0.1 >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  if "$llmctl" --addr "127.0.0.1:$port" health >/dev/null 2>&1; then break; fi
  sleep 0.1
done
"$llmctl" --addr "127.0.0.1:$port" health >/dev/null || { cat "$work/server.log"; echo "FAIL: server did not start"; exit 1; }
grep -q "chat template file $work/chatml.jinja" "$work/server.log" || { cat "$work/server.log"; echo "FAIL: start-up line does not name the template"; exit 1; }

tmux new-session -d -s "$session" -x 120 -y 40 \
  "'$llmctl' --addr 127.0.0.1:$port chat --temperature 0 --max-tokens 24; echo CHAT-EXITED \$?; sleep 30"
screen() { tmux capture-pane -p -t "$session" -S -200; }
wait_for() {  # wait_for PATTERN COUNT: until PATTERN appears COUNT times on the screen
  for _ in $(seq 1 150); do
    if [ "$(screen | grep -c -- "$1" || true)" -ge "$2" ]; then return 0; fi
    sleep 0.1
  done
  screen; echo "FAIL: timed out waiting for '$1' x$2"; exit 1
}
wait_for '^>' 1  # (capture-pane trims the prompt's trailing space)
tmux send-keys -t "$session" "Once upon a time" Enter
wait_for '^\[\(LENGTH\|EOS\)' 1
tmux send-keys -t "$session" "Tell me about the cat" Enter
wait_for '^\[\(LENGTH\|EOS\)' 2
tmux send-keys -t "$session" "/exit" Enter
wait_for 'CHAT-EXITED' 1

out=$(screen)
echo "----- screen -----"; echo "$out"; echo "------------------"
fail() { echo "FAIL: $1"; exit 1; }
echo "$out" | grep -q '^> Once upon a time$' || fail "first user turn not echoed"
echo "$out" | grep -q '^> Tell me about the cat$' || fail "second user turn not echoed"
echo "$out" | grep -q 'CHAT-EXITED 0' || fail "llmctl chat did not exit 0"
# The line after each user turn is the streamed reply: non-empty text.
reply1=$(echo "$out" | sed -n '/^> Once upon a time$/{n;p;}')
[ -n "$reply1" ] || fail "no reply text after the first turn"
prompt1=$(echo "$out" | grep -o '^\[[A-Z]*, [0-9]* prompt' | sed -n 1p | grep -o '[0-9]*')
prompt2=$(echo "$out" | grep -o '^\[[A-Z]*, [0-9]* prompt' | sed -n 2p | grep -o '[0-9]*')
[ -n "$prompt1" ] && [ -n "$prompt2" ] || fail "no stats lines"
[ "$prompt2" -gt "$prompt1" ] || fail "the second turn's prompt ($prompt2 tokens) does not carry the history ($prompt1)"
echo "PASS: two chat turns through llmctl chat (prompt $prompt1 then $prompt2 tokens)"

# The Python chat client against the same server (skipped without python3-grpcio).
if /usr/bin/python3 -c "import grpc, google.protobuf" 2>/dev/null; then
  py_out=$(printf 'Once upon a time\nAnd then?\n/exit\n' | /usr/bin/python3 "$source_dir/examples/python/chat.py" \
    --addr "127.0.0.1:$port" --max-tokens 8 --temperature 0 --show-prompt 2>"$work/py.err") || { cat "$work/py.err"; fail "chat.py failed"; }
  [ -n "$py_out" ] || fail "chat.py printed no reply"
  [ "$(grep -c '^\[LENGTH, 8 tokens\]\|^\[EOS, ' "$work/py.err")" -eq 2 ] || { cat "$work/py.err"; fail "chat.py: not two replies"; }
  grep -q '<|im_start|>user' "$work/py.err" || { cat "$work/py.err"; fail "chat.py --show-prompt shows no rendered prompt"; }
  # The first prompt opens one assistant turn; the second holds the first reply and opens another.
  [ "$(grep -c '^<|im_start|>assistant' "$work/py.err")" -eq 3 ] || { cat "$work/py.err"; fail "chat.py: the second prompt lacks the first reply"; }
  echo "PASS: examples/python/chat.py, two turns"
else
  echo "examples/python/chat.py not run: python3-grpcio is not installed"
fi
