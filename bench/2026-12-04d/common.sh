# sourced by each call script on the device
set -o pipefail
tar -xJf .devrun.tar.xz
export LD_LIBRARY_PATH=$PWD/.devlibs:$LD_LIBRARY_PATH
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
