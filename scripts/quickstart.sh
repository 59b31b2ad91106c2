#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine (with the CUDA Toolkit) to a transcript:
# installs the dependencies, builds, obtains and exports Voxtral Mini 3B, transcribes.
#
#   scripts/quickstart.sh [AUDIO...]
#
# The model: an exported model already in $MODEL_DIR is used as it is. Otherwise a local copy of
# the checkpoint in $VOXTRAL_CHECKPOINT (transformers or Mistral layout) is exported; otherwise
# the Mistral-layout files are downloaded from Hugging Face (about 9.4 GB; set HF_TOKEN if your
# account needs one) into models/download/ and exported. Without AUDIO it transcribes a short
# synthetic clip from the test fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL_DIR=${MODEL_DIR:-models/voxtral-mini-3b}
REPO=${VOXTRAL_REPO:-mistralai/Voxtral-Mini-3B-2507}

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc 2>/dev/null || echo 2)"

if [ ! -f "$MODEL_DIR/voxtral.json" ]; then
  src=${VOXTRAL_CHECKPOINT:-}
  if [ -z "$src" ]; then
    src=models/download/${REPO##*/}
    mkdir -p "$src"
    command -v curl >/dev/null || { [ "$(id -u)" -eq 0 ] && apt-get install -y -qq curl || sudo apt-get install -y -qq curl; }
    auth=()
    [ -n "${HF_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $HF_TOKEN")
    for f in params.json tekken.json consolidated.safetensors; do
      echo "downloading $REPO/$f"
      curl -fL --retry 3 -C - "${auth[@]}" -o "$src/$f" "https://huggingface.co/$REPO/resolve/main/$f" || {
        echo "quickstart: cannot download $REPO/$f. Without network access, download the checkpoint" >&2
        echo "elsewhere and run: VOXTRAL_CHECKPOINT=/path/to/checkpoint $0" >&2
        exit 1
      }
    done
  fi
  build/voxtral_export --from "$src" --out "$MODEL_DIR"
fi

if [ $# -eq 0 ]; then
  set -- tests/fixtures/tiny/audio/short.wav
fi
build/voxtral_runner -m "$MODEL_DIR" --latency "$@"
