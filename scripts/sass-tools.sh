#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Puts NVIDIA's cuobjdump and nvdisasm (CUDA 13, from PyPI: the toolkit packages leave them out)
# into a virtual environment of the project's own, build/sass-tools, and prints the folder that
# holds them. Idempotent. Only bench/bench_sass.py needs them; nothing is installed system-wide.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/build/sass-tools"
python="$("$root/scripts/find-python.sh")"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >&2
fi
bin_dir() {
  "$venv/bin/python" -c 'import glob, os, sys; hits = glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "nvidia", "cu13", "bin", "cuobjdump")); print(os.path.dirname(hits[0]) if hits else "")'
}
if [ -z "$(bin_dir)" ] || [ ! -x "$(bin_dir)/nvdisasm" ]; then
  "$venv/bin/pip" install --quiet "nvidia-cuda-cuobjdump==13.*" "nvidia-cuda-nvdisasm==13.*" >&2
fi
bin_dir
