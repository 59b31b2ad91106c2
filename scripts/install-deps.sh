#!/usr/bin/env bash
# Installs the build and test dependencies from Debian/Ubuntu packages.
# The CUDA Toolkit (nvcc, cuBLAS) is a prerequisite this script does not install: take it from
# NVIDIA's packages for your distribution. Without it the build falls back to the CPU backend.
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libsndfile1-dev   # audio decoding: WAV, FLAC, Ogg/Vorbis, Opus
  libmpg123-dev     # MP3, on a quiet handle of our own (src/audio/mpeg.c)
  libsoxr-dev       # resampling to 16 kHz (the engine mistral-common uses)
  libcjson-dev      # safetensors headers, manifest, tekken.json, JSON output
  libpcre2-dev      # the tokenizer's pre-tokenization regex (Unicode properties)
)
for opt in "$@"; do
  case $opt in
  --with-test-tools) packages+=(espeak-ng sox flac vorbis-tools) ;; # regenerating fixture audio
  --with-slurm) packages+=(slurm-wlm munge) ;; # tests/cli/test_runner_slurm.sh: a one-node cluster
  esac
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "dependencies present: ${packages[*]}"
