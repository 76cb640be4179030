#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The cblob program's peak memory and wall time over every shape of file (issue 10, item 6 and
# defect 1): not a test, a benchmark that prints what it measured.
#
#   bench/cli_bench.sh BUILD_DIR [MIB] [REPEAT]   (MIB: the files' size, 16 by default; REPEAT: 3)
#
# Writes nets with tests/tools/make_net.py into a temporary folder (removed at the end): many tiny
# layers, many empty blobs (64 per layer), one huge layer, a mixed V1 net with every kind of field,
# and a 5,000-layer net with hostile names. For each it runs `cblob inspect`, `inspect --json`,
# `convert --to npy`, `--to npz`, `--to safetensors` and the way back (`npz --like net --to
# caffemodel`; to_npz comes before it and writes its input) under /usr/bin/time, REPEAT times
# interleaved (--to npy of the empty blobs is left out: millions of files), and prints the median peak RSS over
# the file's size, the median against the target (2.5 x file + 16 MiB; <= 1.00 meets it), and the
# median wall time with its min-max. Then convert's time for N and 10 N layers (a plain net of
# 5,000 and 50,000 layers): the ratio's target is at most 12.
set -euo pipefail
build=${1:?usage: bench/cli_bench.sh BUILD_DIR [MIB] [REPEAT]}
mib=${2:-16}
repeat=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
python=$("$here/scripts/find-python.sh")
cblob=$(cd "$build" && pwd)/tools/cblob
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
bytes=$((mib << 20))
make_net() { "$python" "$here/tests/tools/make_net.py" "$@"; }

# A net of about MIB of the shape: one layer's size measured first.
sized_net() { # file, options...
  local file=$1; shift
  make_net "$@" --layers 200 "$file"
  local per_layer=$(( $(stat -c %s "$file") / 200 ))
  make_net "$@" --layers $(( bytes / per_layer )) "$file"
}

sized_net "$folder/tiny_layers.caffemodel" --tiny
sized_net "$folder/empty_blobs.caffemodel" --blobs 0 --empty-blobs 64
make_net --layers 1 --blobs 1 --huge "$bytes" "$folder/huge_layer.caffemodel"
sized_net "$folder/mixed_v1.caffemodel" --format v1 --all --max-values 4000
make_net --names hostile --layers 5000 --max-values 256 "$folder/layers_5000.caffemodel"
shapes=(tiny_layers empty_blobs huge_layer mixed_v1 layers_5000)
commands=(inspect inspect_json to_npy to_npz to_safetensors way_back)

# Runs one command on one net under /usr/bin/time; prints "peak_KiB seconds".
run_one() { # shape, command
  local net=$folder/$1.caffemodel out=$folder/out
  local -a args
  case $2 in
    inspect) args=(inspect "$net") ;;
    inspect_json) args=(inspect --json "$net") ;;
    to_npy) rm -rf "$out.npy_folder"; args=(convert "$net" --to npy "$out.npy_folder") ;;
    to_npz) args=(convert "$net" --to npz "$out.npz") ;;
    to_safetensors) args=(convert "$net" --to safetensors "$out.safetensors") ;;
    way_back) args=(convert "$out.npz" --like "$net" --to caffemodel "$out.caffemodel") ;;
  esac
  /usr/bin/time -f '%M %e' -o "$folder/time" "$cblob" "${args[@]}" >"$folder/stdout"
  cat "$folder/time"
}

# Interleaved repetitions: every (shape, command) once per round.
for ((round = 0; round < repeat; ++round)); do
  for shape in "${shapes[@]}"; do
    for command in "${commands[@]}"; do
      # 64 empty blobs a layer are millions of files: the file system's time, not cblob's.
      [ "$shape $command" != "empty_blobs to_npy" ] || continue
      echo "$shape $command $(run_one "$shape" "$command")" >>"$folder/results"
    done
  done
done

printf '%-12s %6s  %-15s %9s %9s %7s %s\n' shape MiB command peak_MiB peak/file target seconds
for shape in "${shapes[@]}"; do
  size=$(stat -c %s "$folder/$shape.caffemodel")
  for command in "${commands[@]}"; do
    [ "$shape $command" != "empty_blobs to_npy" ] || continue
    awk -v s="$shape" -v c="$command" -v f="$size" '
      BEGIN { n = 0 }
      $1 == s && $2 == c { peak[n] = $3 * 1024; secs[n] = $4; ++n }
      function median(a, n,   i, j, t) {
        for (i = 0; i < n; ++i) for (j = i + 1; j < n; ++j) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2
      }
      END {
        p = median(peak, n); t = median(secs, n)
        printf "%-12s %6.1f  %-15s %9.1f %9.2f %7.2f %.2f (%.2f-%.2f)\n", s, f / 1048576, c, p / 1048576, p / f,
               p / (2.5 * f + 16777216), t, secs[0], secs[n - 1]
      }' "$folder/results"
  done
done

# Convert's time against the number of layers: N and 10 N layers of a plain net, interleaved.
echo
make_net --layers 5000 --blobs 2 --max-values 16 "$folder/n.caffemodel"
make_net --layers 50000 --blobs 2 --max-values 16 "$folder/n10.caffemodel"
"$cblob" convert "$folder/n.caffemodel" --to npz "$folder/n.npz" >/dev/null
"$cblob" convert "$folder/n10.caffemodel" --to npz "$folder/n10.npz" >/dev/null
: >"$folder/scaling"
for ((round = 0; round < repeat; ++round)); do
  for net in n n10; do
    for command in to_npy to_npz way_back; do
      case $command in
        to_npy) rm -rf "$folder/$net.out"; args=(convert "$folder/$net.caffemodel" --to npy "$folder/$net.out") ;;
        to_npz) args=(convert "$folder/$net.caffemodel" --to npz "$folder/$net.tmp.npz") ;;
        way_back) args=(convert "$folder/$net.npz" --like "$folder/$net.caffemodel" --to caffemodel "$folder/$net.back") ;;
      esac
      /usr/bin/time -f '%e' -o "$folder/time" "$cblob" "${args[@]}" >/dev/null
      echo "$net $command $(cat "$folder/time")" >>"$folder/scaling"
    done
  done
done
printf '%-10s %14s %15s %11s\n' command "5000 layers s" "50000 layers s" "ratio (<=12)"
for command in to_npy to_npz way_back; do
  awk -v c="$command" '
    BEGIN { na = nb = 0 }
    $2 == c && $1 == "n" { a[na++] = $3 } $2 == c && $1 == "n10" { b[nb++] = $3 }
    function median(x, n,   i, j, t) {
      for (i = 0; i < n; ++i) for (j = i + 1; j < n; ++j) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      return n % 2 ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2
    }
    END { p = median(a, na); q = median(b, nb); printf "%-10s %14.2f %15.2f %11.1f\n", c, p, q, q / p }' "$folder/scaling"
done
