#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Peak memory of opening models of every shape, against the file's size (issue 10, item 6).
#
#   bench/model_memory.sh BUILD_DIR [MIB]     (MIB: the files' size, 16 by default; up to 1024)
#
# Writes nets with tests/tools/make_net.py into a temporary folder (removed at the end): many
# tiny layers, many empty blobs, one huge layer, and a mixed V1 net; opens each with
# bench_model_open under /usr/bin/time -v and prints the peak RSS, the RSS of opening a tiny file
# (the process's own), and (peak - own) / file size.
set -euo pipefail
build=${1:?usage: bench/model_memory.sh BUILD_DIR [MIB]}
mib=${2:-16}
here=$(cd "$(dirname "$0")/.." && pwd)
python=$("$here/scripts/find-python.sh")
open="$build/bench/bench_model_open"
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
bytes=$((mib << 20))

peak_kib() { /usr/bin/time -v "$open" "$1" 2>&1 >/dev/null | awk '/Maximum resident/ {print $6}'; }

"$python" "$here/tests/tools/make_net.py" --layers 1 "$folder/own.caffemodel"
own=$(peak_kib "$folder/own.caffemodel")
# Sizes of one layer of each shape, measured, so each file comes out near MIB.
declare -A options=(
  [tiny_layers]="--tiny"
  [empty_blobs]="--blobs 0 --empty-blobs 64"
  [huge_layer]="--layers 1 --huge $bytes"
  [mixed_v1]="--format v1 --all --max-values 4000"
)
printf '%-12s %10s %10s %10s %8s\n' shape file_MiB peak_MiB own_MiB ratio
for shape in tiny_layers empty_blobs huge_layer mixed_v1; do
  file="$folder/$shape.caffemodel"
  if [ "$shape" = huge_layer ]; then
    "$python" "$here/tests/tools/make_net.py" ${options[$shape]} "$file"
  else
    "$python" "$here/tests/tools/make_net.py" ${options[$shape]} --layers 1000 "$file"
    per_layer=$(( $(stat -c %s "$file") / 1000 ))
    "$python" "$here/tests/tools/make_net.py" ${options[$shape]} --layers $(( bytes / per_layer )) "$file"
  fi
  size=$(stat -c %s "$file")
  peak=$(peak_kib "$file")
  awk -v s="$shape" -v f="$size" -v p="$peak" -v o="$own" \
    'BEGIN { printf "%-12s %10.1f %10.1f %10.1f %8.2f\n", s, f / 1048576, p / 1024, o / 1024, (p - o) * 1024 / f }'
  rm -f "$file"
done
