#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Loading a large .caffemodel: cblob_model_open_file against real Caffe's ReadProtoFromBinaryFile
# (Debian 11's build, fetched by scripts/caffe-env.sh), cold and warm, in fresh processes, medians
# of interleaved rounds (bench_cold's load table with Caffe as a fifth contender).
#
#   bench/caffe_load.sh [BUILD_DIR] [bench_cold options: --size-mib N --rounds N --gap S ...]
#
# BUILD_DIR defaults to build/release (bench_cold must be built there). Needs g++.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build/release
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$(cd "$1" && pwd); shift; fi
wrapper=$("$here/scripts/caffe-env.sh" --print 2>/dev/null) || { echo "caffe_load: run scripts/caffe-env.sh first" >&2; exit 1; }
caffe=$(dirname "$(dirname "$wrapper")")
library_path=$("$wrapper" --env | sed -n 's/^LD_LIBRARY_PATH=//p')
lib=$caffe/root/usr/lib/x86_64-linux-gnu
peer=$build/bench/caffe_peer
source=$here/tests/formats/caffe_peer.cpp
if [ ! -x "$peer" ] || [ "$source" -nt "$peer" ] || [ "$caffe/complete" -nt "$peer" ]; then
  # -O2 as Debian built libcaffe; the parse itself is in libprotobuf.so.23 and libcaffe
  "${CXX:-g++}" -O2 -std=c++14 -DCPU_ONLY -I"$caffe/include" -I"$caffe/root/usr/include" "$source" -o "$peer.tmp" \
    "$lib/libcaffe.so.1.0.0" "$lib/libprotobuf.so.23" "$lib/libglog.so.0" -Wl,-rpath-link,"$lib:$caffe/root/usr/lib"
  mv "$peer.tmp" "$peer"
fi
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); uptime:$(uptime)"
echo "command: bench/caffe_load.sh $* (Caffe 1.0.0+git20180821.99bd997-8+b2, libprotobuf 3.12.4, Debian 11 packages)"
exec "$build/bench/bench_cold" --load-only --caffe-peer "$peer" --caffe-library-path "$library_path" "$@"
