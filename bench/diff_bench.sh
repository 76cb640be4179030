#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# cblob diff's peak memory and wall time (issue 28): not a test, a benchmark that prints what it
# measured.
#
#   bench/diff_bench.sh BUILD_DIR [LAYERS] [MIB_PER_LAYER] [REPEAT]     (32 16 3 by default)
#
# Writes a net of LAYERS layers of one float32 blob of MIB_PER_LAYER MiB each and a copy whose
# last value differs (so every value is read), then runs `cblob diff A B` REPEAT times interleaved
# under /usr/bin/time in two ways: as shipped (a lazily opened side that has read 64 MiB of values
# is opened again, giving them back) and with CBLOB_TOOL_TEST_RELIEVE_BYTES set past the files'
# size (each side keeps every value it read, as a lazy open does). It prints the median peak RSS
# and wall time of each, their ratio, and the file's size; `cblob inspect --shapes` shows the
# program's own floor.
set -euo pipefail
build=${1:?usage: bench/diff_bench.sh BUILD_DIR [LAYERS] [MIB_PER_LAYER] [REPEAT]}
layers=${2:-32}
mib=${3:-16}
repeat=${4:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
python=$("$here/scripts/find-python.sh")
cblob=$(cd "$build" && pwd)/tools/cblob
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT

# The NetParameter written by hand (Caffe's field numbers): layer = 100 {name = 1, type = 2,
# blobs = 7 {data = 5 packed, shape = 7 {dim = 1 packed}}}.
"$python" - "$folder" "$layers" "$mib" <<'PY'
import struct, sys
folder, layers, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload
count = mib << 18  # float32 values
for name, last in (("a", 0.0), ("b", 1.0)):
    with open(f"{folder}/{name}.caffemodel", "wb") as f:
        for i in range(layers):
            values = bytearray(struct.pack("<f", 0.5)) * count
            if i == layers - 1:
                values[-4:] = struct.pack("<f", last)
            blob = field(7, field(1, varint(count))) + field(5, bytes(values))
            f.write(field(100, field(1, f"ip{i}".encode()) + field(2, b"InnerProduct") + field(7, blob)))
PY

measure() { # mode -> "peak_KiB seconds"
  local -a env=()
  [ "$1" = keep ] && env=(CBLOB_TOOL_TEST_RELIEVE_BYTES=$((1 << 50)))
  set +e
  env "${env[@]}" /usr/bin/time -f '%M %e' -o "$folder/time" "$cblob" diff --quiet "$folder/a.caffemodel" "$folder/b.caffemodel"
  local status=$?
  set -e
  [ "$status" = 1 ] || { echo "cblob diff exited $status, expected 1 (the files differ)" >&2; exit 1; }
  tail -n 1 "$folder/time"
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

declare -A peaks times
for ((r = 0; r < repeat; ++r)); do
  for mode in relieve keep; do
    read -r peak seconds < <(measure "$mode")
    peaks[$mode]+="$peak "
    times[$mode]+="$seconds "
  done
done
/usr/bin/time -f '%M' -o "$folder/floor" "$cblob" inspect --shapes "$folder/a.caffemodel" >/dev/null
size=$(stat -c %s "$folder/a.caffemodel")
printf 'two nets of %d layers, %d MiB each (%.0f MiB a file), %d runs interleaved, medians\n' \
  "$layers" "$mib" "$(echo "$size / 1048576" | bc -l)" "$repeat"
for mode in relieve keep; do
  p=$(tr ' ' '\n' <<<"${peaks[$mode]}" | grep . | median)
  t=$(tr ' ' '\n' <<<"${times[$mode]}" | grep . | median)
  printf '%-8s peak %7.0f MiB  (%.2f x one file)  wall %6.2f s\n' "$mode" "$(echo "$p / 1024" | bc -l)" \
    "$(echo "$p * 1024 / $size" | bc -l)" "$t"
  eval "p_$mode=$p t_$mode=$t"
done
printf 'relieve / keep: peak %.2f, wall %.2f; inspect --shapes peak %.0f MiB\n' "$(echo "$p_relieve / $p_keep" | bc -l)" \
  "$(echo "$t_relieve / $t_keep" | bc -l)" "$(echo "$(cat "$folder/floor") / 1024" | bc -l)"
