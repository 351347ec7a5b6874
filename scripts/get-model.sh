#!/usr/bin/env bash
# Downloads the default model for scripts/run.sh into models/ (gitignored):
#   stories15M.bin  karpathy's llama2.c TinyStories model (15M parameters, Llama 2
#                   architecture), from its Hugging Face page karpathy/tinyllamas (MIT)
#   tokenizer.bin   the llama2.c export of the Llama 2 tokenizer it uses (karpathy/llama2.c, MIT)
# Each file is checked against its sha256 and only then moved into place; a file already
# present and correct is not fetched again.
#
# Usage: scripts/get-model.sh [DIR]     (default DIR: models)
# Exit status: 0 when both files are in DIR and verified; 1 when they could not be had
# (no internet, proxy, server error, checksum mismatch) with the reason on stderr.
# Uses curl, else wget, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${1:-models}"
mkdir -p "$dir"

MODEL_URL="https://huggingface.co/karpathy/tinyllamas/resolve/main/stories15M.bin"
MODEL_SHA256="cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a"  # 60816028 bytes
# Pinned to the llama2.c commit whose tokenizer.bin the golden tests use.
TOKENIZER_URL="https://raw.githubusercontent.com/karpathy/llama2.c/350e04fe35433e6d2941dce5a1f53308f87058eb/tokenizer.bin"
TOKENIZER_SHA256="50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361"  # 433869 bytes

say() { echo "get-model: $*" >&2; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# download URL FILE: fetches URL into FILE (bounded time); non-zero on any failure.
download() {
  local url="$1" out="$2"
  if command -v curl >/dev/null 2>&1; then
    curl --fail --location --silent --show-error --retry 2 --connect-timeout 15 --max-time 900 -o "$out" "$url"
  elif command -v wget >/dev/null 2>&1; then
    wget --quiet --tries=3 --timeout=15 -O "$out" "$url"
  elif command -v python3 >/dev/null 2>&1; then
    python3 - "$url" "$out" <<'EOF'
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=15) as r, open(sys.argv[2], "wb") as f:
    shutil.copyfileobj(r, f)
EOF
  else
    say "no downloader found (curl, wget or python3)"
    return 1
  fi
}

# fetch NAME URL SHA256: makes DIR/NAME the verified file.
fetch() {
  local name="$1" url="$2" sha="$3"
  local dest="$dir/$name" part="$dir/.$name.part"
  if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$sha" ]; then
    say "$dest: present (sha256 ok)"
    return 0
  fi
  say "downloading $url"
  rm -f "$part"
  if ! download "$url" "$part"; then
    rm -f "$part"
    say "could not download $url (no internet access?)"
    return 1
  fi
  local got
  got="$(sha256_of "$part")"
  if [ "$got" != "$sha" ]; then
    rm -f "$part"
    say "$url: sha256 $got does not match the expected $sha"
    return 1
  fi
  mv -f "$part" "$dest"
  say "$dest: ok ($(stat -c %s "$dest") bytes, sha256 verified)"
}

if fetch stories15M.bin "$MODEL_URL" "$MODEL_SHA256" && fetch tokenizer.bin "$TOKENIZER_URL" "$TOKENIZER_SHA256"; then
  say "model ready: --model $dir/stories15M.bin --tokenizer $dir/tokenizer.bin"
  exit 0
fi
say "the default model is not available"
exit 1
