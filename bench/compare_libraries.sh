#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Open and save speed of two builds of the library, side by side in one run (issue 24: within 5%
# of the library before the walker). The same bench programs of BUILD_DIR run in turns against
# each library (LD_LIBRARY_PATH names its folder, which the programs' RUNPATH yields to), the
# order alternating each round:
#   - bench_model_open (open, list every layer and blob shape, save) over four nets: LeNet (real),
#     a net of 64 small layers and one of MIB MiB, 16 MiB of tiny layers, a mixed V1 net; each run
#     gives its medians of 25 opens and saves in turn for LeNet (a millisecond each), 3 for the
#     others;
#   - bench_load (BlobProto decode; cblob_model_open_file and _lazy of a net of 64 layers), whose
#     own medians are collected from each of its runs.
# Each figure is the median of the rounds; ratio = new / old (below 1: the new build is faster).
#
#   bench/compare_libraries.sh BUILD_DIR OLD_LIBRARY_DIR [ROUNDS] [MIB] [FOLDER]
#
# OLD_LIBRARY_DIR holds the other build's libcblob.so.1 (its build/<preset>/src). ROUNDS: 9 by
# default; MIB: the large net's size, 256 by default; FOLDER: where the nets are written and saved
# (a new folder under it, removed at the end; $TMPDIR or /tmp by default): on tmpfs (/dev/shm) a
# save's fsync costs nothing and the figures are the libraries' own work, on a disk they include
# the disk's. Read `cat /proc/loadavg` first: the machine is shared, and the ratios are what to
# read.
set -euo pipefail
build=${1:?usage: bench/compare_libraries.sh BUILD_DIR OLD_LIBRARY_DIR [ROUNDS] [MIB] [FOLDER]}
old=${2:?usage: bench/compare_libraries.sh BUILD_DIR OLD_LIBRARY_DIR [ROUNDS] [MIB] [FOLDER]}
rounds=${3:-9}
mib=${4:-256}
here=$(cd "$(dirname "$0")/.." && pwd)
new="$build/src"
python=$("$here/scripts/find-python.sh")
folder=$(mktemp -d -p "${5:-${TMPDIR:-/tmp}}")
trap 'rm -rf "$folder"' EXIT

data="$here/../shared/data/caffe/lenet_iter_10000.caffemodel"
nets=()
[ -f "$data" ] && cp "$data" "$folder/lenet.caffemodel" && nets+=(lenet)
"$python" "$here/tests/tools/make_net.py" --layers 64 --blobs 2 --huge $((mib << 20)) \
  "$folder/large_blobs.caffemodel"
"$python" "$here/tests/tools/make_net.py" --tiny --layers 1000 "$folder/tiny.caffemodel"
per_layer=$(($(stat -c %s "$folder/tiny.caffemodel") / 1000))
"$python" "$here/tests/tools/make_net.py" --tiny --layers $(((16 << 20) / per_layer)) "$folder/tiny_layers.caffemodel"
"$python" "$here/tests/tools/make_net.py" --format v1 --all --max-values 4000 --layers 20000 "$folder/mixed_v1.caffemodel"
rm -f "$folder/tiny.caffemodel"
nets+=(large_blobs tiny_layers mixed_v1)
printf 'files on %s (%s), load before %s\n' "$folder" "$(stat -f -c %T "$folder")" "$(cut -d' ' -f1-3 /proc/loadavg)"
for net in "${nets[@]}"; do
  printf '%-12s %7.1f MiB\n' "$net" "$(stat -c %s "$folder/$net.caffemodel" | awk '{print $1 / 1048576}')"
done

declare -A times
# One timed run of bench_model_open: appends "open save" seconds to times[lib.net].
run_open() {
  local lib=$1 net=$2 line
  local repeats=3
  [ "$net" = lenet ] && repeats=25
  line=$(LD_LIBRARY_PATH="$lib" "$build/bench/bench_model_open" "$folder/$net.caffemodel" "$folder/saved.caffemodel" \
         "$repeats" |
         awk '/^seconds:/ {print $3, $7}')
  times[$3.$net.open]+="${line% *} "
  times[$3.$net.save]+="${line#* } "
  cmp -s "$folder/$net.caffemodel" "$folder/saved.caffemodel" || { echo "$3: $net did not save byte for byte" >&2; exit 1; }
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for ((r = 0; r < rounds; ++r)); do
  for net in "${nets[@]}"; do
    if ((r % 2 == 0)); then run_open "$old" "$net" old; run_open "$new" "$net" new
    else run_open "$new" "$net" new; run_open "$old" "$net" old; fi
  done
done

printf 'load %s; %d rounds, medians (seconds), ratio new / old\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$rounds"
printf '%-12s %-5s %11s %11s %7s\n' net what old new ratio
for net in "${nets[@]}"; do
  for what in open save; do
    o=$(echo "${times[old.$net.$what]}" | median)
    n=$(echo "${times[new.$net.$what]}" | median)
    awk -v net="$net" -v what="$what" -v o="$o" -v n="$n" \
      'BEGIN { printf "%-12s %-5s %11.6f %11.6f %7.3f\n", net, what, o, n, n / o }'
  done
done

# bench_load: its own medians (decode, full and lazy open), from runs alternating the libraries.
declare -A load
for ((r = 0; r < 3; ++r)); do
  order="old new"; ((r % 2 == 0)) || order="new old"
  for lib in $order; do
    dir=$old; [ "$lib" = new ] && dir=$new
    out=$(LD_LIBRARY_PATH="$dir" "$build/bench/bench_load" "$mib" --folder "$folder" --rounds 5)
    ms() { echo "$out" | grep -E "$1" | head -1 | sed -E 's/.* ([0-9.]+) ms .*/\1/'; }
    load[$lib.decode]+="$(ms '^cblob_blob_create_from_proto, [0-9]+ threads') "
    load[$lib.full]+="$(ms '^cblob_model_open_file ') "
    load[$lib.lazy]+="$(ms '^cblob_model_open_file_lazy') "
  done
done
printf '\nbench_load %d MiB (milliseconds, medians of its medians over 3 runs each)\n' "$mib"
for what in decode full lazy; do
  o=$(echo "${load[old.$what]}" | median)
  n=$(echo "${load[new.$what]}" | median)
  awk -v what="$what" -v o="$o" -v n="$n" 'BEGIN { printf "%-12s %11.3f %11.3f %7.3f\n", what, o, n, n / o }'
done
