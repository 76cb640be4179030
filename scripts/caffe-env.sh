#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fetches real BVLC Caffe (Debian 11 "bullseye"'s CPU_ONLY build, 1.0.0+git20180821.99bd997-8+b2)
# into a private folder, so that tests and benchmarks can compare cblob with Caffe's own tools and
# library. Nothing is installed system-wide and /etc/apt is not read or changed: apt runs with a
# private sources.list, package lists and cache; its signature checks use the system's keyring.
# Every package is pinned to the version the closure below was computed for, and extracted with
# `dpkg -x` (no maintainer scripts). Debian 12 packages of the same sonames are not assumed
# present: the whole runtime closure is fetched except the base system (libc6, libstdc++6,
# libgcc-s1 and Priority required/important packages, which a Debian 12 system has, newer).
#
# usage: caffe-env.sh            fetch if needed (idempotent, under a lock); print the wrapper
#        caffe-env.sh --print    print the wrapper if Caffe is there, exit 1 otherwise (no network)
#
# Folder: $CBLOB_CAFFE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/cblob/caffe-<version>. Inside:
#   root/             the extracted packages (root/usr/bin/upgrade_net_proto_text, ...)
#   bin/caffe-run     runs one of Caffe's programs: caffe-run TOOL ARGS... (LD_LIBRARY_PATH set,
#                     glog quiet below warnings); `caffe-run --env` prints the variables
#   include/          caffe/proto/caffe.pb.h remade for bullseye's protobuf headers (see below);
#                     compile against Caffe with -I include -I root/usr/include
#   complete          written last; its presence means the folder is whole
# Cost (measured 2026-11-27 from this VM, deb.debian.org): about 80 MB of packages and 8 MB of
# package lists downloaded, 420 MB extracted (Boost's headers are 160 MB of it); 36 s to 113 s;
# a second run finds it in 0.01 s.
# Exit status: 0 fetched or present; 1 not available (no network, a package gone from the mirror):
# callers that only need Caffe for a cross-check skip (tests exit 77 with this script's message).
set -euo pipefail

caffe_version=1.0.0+git20180821.99bd997-8+b2
mirror=${CBLOB_CAFFE_MIRROR:-http://deb.debian.org/debian}
dir=${CBLOB_CAFFE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cblob/caffe-$caffe_version}

say() { echo "caffe-env: $*" >&2; }

print_usage_of_wrapper() {
  echo "$dir/bin/caffe-run"
  say "real Caffe $caffe_version is in $dir"
  say "run its tools as: $dir/bin/caffe-run upgrade_net_proto_text IN OUT (or caffe, upgrade_net_proto_binary, ...)"
}

if [ -f "$dir/complete" ]; then
  print_usage_of_wrapper
  exit 0
fi
if [ "${1:-}" = --print ]; then
  say "real Caffe is not in $dir (run scripts/caffe-env.sh to fetch it)"
  exit 1
fi

# The pinned closure: `apt-get -s install caffe libcaffe-dev libprotobuf-dev libgoogle-glog-dev
# libgflags-dev libboost1.74-dev` against bullseye with nothing installed, less the base system
# (Priority required or important in Debian 12: libc6, libstdc++6, libgcc-s1, libselinux1, liblzma5,
# ...: Debian 12 has them, newer), less data-only packages (tzdata, proj-data, gdal-data, fonts,
# configuration), less the C library's and compiler's development packages and runtimes
# (Debian 12's own compile against Caffe), plus bullseye's protoc. OpenCV's image codecs pull in
# GDAL and its own closure: that is most of the download, and libcaffe needs it to load.
packages=(
  libblas3=3.9.0-3+deb11u1
  libboost-filesystem1.74.0=1.74.0-9
  libboost-python1.74.0=1.74.0-9
  libboost-thread1.74.0=1.74.0-9
  libgflags2.2=2.2.2-2
  libunwind8=1.3.2-2
  libgoogle-glog0v5=0.4.0-4
  libaec0=1.0.4-1
  libsz2=1.0.4-1
  libhdf5-103-1=1.10.6+repack-4+deb11u1
  libhdf5-hl-100=1.10.6+repack-4+deb11u1
  libsnappy1v5=1.1.8-1
  libleveldb1d=1.22-3
  liblmdb0=0.9.24-1
  libtbb2=2020.3-1
  libopencv-core4.5=4.5.1+dfsg-5
  libquadmath0=10.2.1-6
  libgfortran5=10.2.1-6
  liblapack3=3.9.0-3+deb11u1
  libarpack2=3.8.0-1
  libsuperlu5=5.2.2+dfsg1-2
  libarmadillo10=1:10.1.2+dfsg-6+b1
  libbrotli1=1.0.9-2+b2
  libnettle8=3.7.3-1
  libhogweed6=3.7.3-1
  libunistring2=0.9.10-4
  libidn2-0=2.3.0-5
  libffi7=3.3-6
  libp11-kit0=0.23.22-1
  libtasn1-6=4.16.0-2+deb11u1
  libgnutls30=3.7.1-5+deb11u5
  libcom-err2=1.46.2-2
  libkrb5support0=1.18.3-6+deb11u5
  libk5crypto3=1.18.3-6+deb11u5
  libkeyutils1=1.6.1-2
  libssl1.1=1.1.1w-0+deb11u1
  libkrb5-3=1.18.3-6+deb11u5
  libgssapi-krb5-2=1.18.3-6+deb11u5
  libdb5.3=5.3.28+dfsg1-0.8
  libsasl2-modules-db=2.1.27+dfsg-2.1+deb11u1
  libsasl2-2=2.1.27+dfsg-2.1+deb11u1
  libldap-2.4-2=2.4.57+dfsg-3+deb11u1
  libnghttp2-14=1.43.0-1+deb11u1
  libpsl5=0.21.0-1.2
  librtmp1=2.4+20151223.gitfa8646d.1-2+b2
  libgpg-error0=1.38-2
  libgcrypt20=1.8.7-6
  libssh2-1=1.9.0-2+deb11u1
  libcurl3-gnutls=7.74.0-1.3+deb11u13
  libcfitsio9=3.490-3
  libcharls2=2.2.0+dfsg-2
  libtirpc3=1.3.1-1+deb11u1
  libicu67=67.1-7
  libxml2=2.9.10+dfsg-6.7+deb11u4
  libdap27=3.20.7-6
  libdapclient6v5=3.20.7-6
  libdeflate0=1.7-1
  libepsilon1=0.9.2+dfsg-5
  libexpat1=2.2.10-2+deb11u5
  libfreexl1=1.0.6-1
  libfyba0=4.1.1-7
  libgeos-3.9.0=3.9.0-1
  libgeos-c1v5=3.9.0-1
  libsqlite3-0=3.34.1-3
  libjbig0=2.1-3.1+b2
  libjpeg62-turbo=1:2.0.6-4
  libwebp6=0.6.1-2.1+deb11u2
  libzstd1=1.4.8+dfsg-2.1
  libtiff5=4.2.0-1+deb11u5
  libproj19=7.2.1-1
  libgeotiff5=1.6.0-1
  libgif7=5.1.9-2
  libhdf4-0-alt=4.2.15-3
  libaom0=1.0.0.errata1-3+deb11u1
  libdav1d4=0.7.1-3+deb11u1
  libde265-0=1.0.11-0+deb11u3
  libnuma1=2.0.12-1+b1
  libx265-192=3.4-2
  libheif1=1.11.0-1
  libjson-c5=0.15-2+deb11u1
  libminizip1=1.1-8+deb11u1
  liburiparser1=0.9.4+dfsg-1+deb11u1
  libkmlbase1=1.3.0-9
  libkmldom1=1.3.0-9
  libkmlengine1=1.3.0-9
  libmariadb3=1:10.5.23-0+deb11u1
  libnetcdf18=1:4.7.4-1
  libltdl7=2.4.6-15
  libodbc1=2.3.6-0.1+b1
  libogdi4.1=4.1.0+ds-5
  libopenjp2-7=2.4.0-3
  libpcre3=2:8.39-13
  libpng16-16=1.6.37-3
  libfreetype6=2.10.4+dfsg-1+deb11u1
  libuuid1=2.36.1-8+deb11u2
  libfontconfig1=2.13.1-4.2
  liblcms2-2=2.12~rc1-2
  libnspr4=2:4.29-1
  libnss3=2:3.61-1+deb11u3
  libpoppler102=20.09.0-3.1+deb11u1
  libpq5=13.16-0+deb11u1
  libqhull8.0=2020.2-3
  librttopo1=1.1.0-2
  libspatialite7=5.0.1-2
  libxerces-c3.2=3.2.3+debian-3+deb11u1
  odbcinst1debian2=2.3.6-0.1+b1
  libgdal28=3.2.2+dfsg-2+deb11u2
  libsocket++1=1.12.13-11
  libgdcm3.0=3.0.8-2
  libopencv-imgproc4.5=4.5.1+dfsg-5
  libilmbase25=2.5.4-1
  libopenexr25=2.5.4-2+deb11u1
  libopencv-imgcodecs4.5=4.5.1+dfsg-5
  libprotobuf23=3.12.4-1+deb11u1
  libpython3.9-minimal=3.9.2-1
  libmpdec3=2.5.1-1
  libncursesw6=6.2+20201114-2+deb11u2
  libnsl2=1.3.0-2
  libpython3.9-stdlib=3.9.2-1
  libpython3.9=3.9.2-1
  libcaffe1=1.0.0+git20180821.99bd997-8+b2
  caffe=1.0.0+git20180821.99bd997-8+b2
  libgomp1=10.2.1-6
  libboost1.74-dev=1.74.0-9
  libcaffe-dev=1.0.0+git20180821.99bd997-8+b2
  libgflags-dev=2.2.2-2
  libgoogle-glog-dev=0.4.0-4
  libprotobuf-lite23=3.12.4-1+deb11u1
  libprotobuf-dev=3.12.4-1+deb11u1
  # protoc 3.12, to remake caffe.pb.h (see below)
  libprotoc23=3.12.4-1+deb11u1
  protobuf-compiler=3.12.4-1+deb11u1
)

command -v apt-get >/dev/null && command -v dpkg >/dev/null && command -v flock >/dev/null || {
  say "apt-get, dpkg and flock are needed (Debian)"; exit 1; }

mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if [ -f "$dir/complete" ]; then   # another process fetched it while this one waited
  print_usage_of_wrapper
  exit 0
fi

work=$dir.partial
rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/debs" "$work/root" "$work/bin"
trap 'rm -rf "$work"' EXIT
echo "deb $mirror bullseye main" > "$work/apt/sources.list"
: > "$work/apt/status"
apt_options=(
  -o Dir::Etc::sourcelist="$work/apt/sources.list" -o Dir::Etc::sourceparts=-
  -o Dir::State::Lists="$work/apt/lists" -o Dir::State::status="$work/apt/status"
  -o Dir::Cache="$work/apt/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)"
  -o Acquire::Retries=3 -o Acquire::http::Timeout=30 -qq
)
say "fetching Caffe $caffe_version and its libraries from $mirror (bullseye) into $dir"
if ! apt-get "${apt_options[@]}" update >"$work/apt.log" 2>&1; then
  cat "$work/apt.log" >&2
  say "could not read bullseye's package lists from $mirror"
  exit 1
fi
if ! (cd "$work/debs" && apt-get "${apt_options[@]}" download "${packages[@]}") >>"$work/apt.log" 2>&1; then
  tail -n 20 "$work/apt.log" >&2
  say "could not download the pinned packages from $mirror"
  exit 1
fi
for deb in "$work"/debs/*.deb; do
  dpkg -x "$deb" "$work/root"
done
rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/locale"
lib=$work/root/usr/lib/x86_64-linux-gnu

# libcaffe-dev's caffe.pb.h was generated by a newer protoc than bullseye's protobuf 3.12 headers
# (it names AuxiliaryParseTableField and ConstStringParam, which 3.12 lacks), so nothing compiles
# against it. include/caffe/proto/caffe.pb.h is remade by bullseye's own protoc 3.12 from BVLC's
# caffe.proto (third_party/caffe); compile with -I"$dir/include" first. It must declare the very
# fields libcaffe was built with: the field numbers of both headers are compared.
proto=$(cd "$(dirname "$0")/.." && pwd)/third_party/caffe/caffe.proto
mkdir -p "$work/include/caffe/proto"
LD_LIBRARY_PATH=$lib "$work/root/usr/bin/protoc" -I"$(dirname "$proto")" --cpp_out="$work/include/caffe/proto" "$proto"
rm "$work/include/caffe/proto/caffe.pb.cc"
field_numbers() { grep -oE "k[A-Za-z0-9]*FieldNumber = [0-9]+" "$1" | sort; }
if [ "$(field_numbers "$work/include/caffe/proto/caffe.pb.h")" != "$(field_numbers "$work/root/usr/include/caffe/proto/caffe.pb.h")" ]; then
  say "third_party/caffe/caffe.proto does not declare the fields Debian's libcaffe was built with"
  exit 1
fi

cat > "$work/bin/caffe-run" <<'WRAPPER'
#!/bin/sh
# Runs one of real Caffe's programs from the private root beside this folder (scripts/caffe-env.sh).
root=$(cd "$(dirname "$0")/../root" && pwd)
LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu:$root/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
GLOG_minloglevel=${GLOG_minloglevel:-1}
export LD_LIBRARY_PATH GLOG_minloglevel
if [ "${1:-}" = --env ]; then
  echo "CAFFE_ROOT=$root"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  exit 0
fi
[ $# -ge 1 ] || { echo "usage: caffe-run TOOL ARGS... (tools: $(ls "$root/usr/bin" | tr '\n' ' '))" >&2; exit 2; }
tool=$1
shift
exec "$root/usr/bin/$tool" "$@"
WRAPPER
chmod +x "$work/bin/caffe-run"

# Every library the tools and libcaffe need must resolve inside the root or on the system.
missing=$(LD_LIBRARY_PATH="$lib:$work/root/usr/lib" \
  ldd "$work/root/usr/bin/caffe" "$work/root/usr/bin/upgrade_net_proto_text" \
      "$work/root/usr/bin/upgrade_net_proto_binary" "$lib/libcaffe.so.1.0.0" \
  | grep "not found" | sort -u || true)
if [ -n "$missing" ]; then
  say "libraries missing after extraction:"; echo "$missing" >&2
  exit 1
fi
rm -rf "$work/debs" "$work/apt"
echo "$caffe_version" > "$work/complete"
rm -rf "$dir"
mv "$work" "$dir"
trap - EXIT
print_usage_of_wrapper
