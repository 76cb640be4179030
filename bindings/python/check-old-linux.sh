#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs a built binary wheel on older Linux distributions, for real: the check behind the wheel's
# manylinux_2_17 tag, which otherwise rests only on the glibc symbol versions its ELF files ask for
# (tests/check_wheel.py; bindings/python/README.md, "Which Linux").
#   bindings/python/check-old-linux.sh WHEEL [DISTRIBUTION...]
#       (default: bionic bullseye xenial; the results are summed up at the end)
# For each distribution:
#   1. a minimal root file system (debootstrap --variant=minbase from the distribution's mirror,
#      checked against its archive key), made once and kept in
#      ${XDG_CACHE_HOME:-$HOME/.cache}/cblob/rootfs-NAME (a `complete` file marks one that is
#      finished; one without it is made again), with the distribution's own Python and protoc
#   2. inside it (chroot, in a mount namespace of its own: a fresh /proc, a private /dev holding
#      only null, zero, full, random and urandom bound from the host, tmpfs /tmp and /dev/shm;
#      nothing of this tree is visible there, nothing is mounted on the host): the wheel's own
#      `cblob` program and libraries from the unzipped wheel (`cblob info`, `cblob convert` of a
#      real .caffemodel to .npz, `cblob inspect` of the .npz)
#   3. where the distribution's Python meets the package's requires-python: a venv of that Python,
#      `pip install` of the wheel and the test pins (NumPy, protobuf, pytest) from PyPI, the
#      package's version, tests/check_fresh_venv.py (a model loads, the library, BLIS and
#      protobuf-c are the wheel's), `cblob info` through it, and the pytest suite of bindings/python/tests
#      (copied in with samples/, proto/ and ../shared/data/caffe, which the suite reads)
# Each distribution's glibc (`ldd --version`) and pytest's counts are printed. The exit status is
# non-zero when any step of any distribution fails; the message names both.
#
# Cost: the first run makes the roots: tens of MB of packages from each mirror and NumPy's, pip's
# and protobuf's wheels from PyPI (kept in the roots' pip caches), 170-450 MB on disk per root;
# measured here (2 shared cores) 3.5-4 min for the three, a later run under a minute. That, and the
# network it needs (an Ubuntu and a Debian mirror, PyPI), is why it is not part of CI
# (scripts/test.sh): run it by hand after changing how the wheel is built (build-wheel.sh,
# build-deps.sh), and record the results in the README.
# Needs root (debootstrap, chroot, mounts), debootstrap and the archive keys, which it installs
# with apt-get when they are missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() {
  echo "usage: $0 WHEEL [DISTRIBUTION...]   (distributions: bionic bullseye xenial; default all)" >&2
  exit 2
}
[ $# -ge 1 ] || usage
case "$1" in -h | --help) usage ;; esac
wheel=$(realpath -e "$1" 2>/dev/null) || { echo "check-old-linux: no wheel at $1" >&2; exit 2; }
# Refused here, once, rather than by unzip in every root: a wheel is a zip archive named *.whl.
case "$wheel" in *.whl) ;; *) echo "check-old-linux: $1 is not a wheel (*.whl)" >&2; exit 2 ;; esac
unzip -tqq "$wheel" >/dev/null 2>&1 || { echo "check-old-linux: $1 is not a readable zip archive" >&2; exit 2; }
shift
distributions=("$@")
[ ${#distributions[@]} -gt 0 ] || distributions=(bionic bullseye xenial)
[ "$(id -u)" = 0 ] || { echo "check-old-linux: needs root (debootstrap, chroot, mount namespaces)" >&2; exit 2; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cblob
data_dir=${CBLOB_CAFFE_DATA_DIR:-$root/../shared/data/caffe}
requirements=$here/requirements-test.txt
floor=$(sed -n 's/^requires-python = ">=\([0-9.]*\)"/\1/p' "$here/pyproject.toml")
ubuntu=http://archive.ubuntu.com/ubuntu
debian=http://deb.debian.org/debian
debian_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
ubuntu_keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg

# describe NAME: what each distribution is. Sets mirror, keyring, components, sources (the
# root's apt lines: release, updates, security), packages (what to install in the root) and
# python (its interpreter of requires-python's version or newer; empty: the native parts only).
describe() {
  case "$1" in
    bionic)     # Ubuntu 18.04, glibc 2.27: below manylinux_2_28 (RHEL 8), near Amazon Linux 2 (2.26).
                # python3.8's venv needs python3-distutils (the one holding python3.8's distutils.sysconfig)
      mirror=$ubuntu keyring=$ubuntu_keyring components=main,universe
      sources=("deb $ubuntu bionic main universe" "deb $ubuntu bionic-updates main universe"
               "deb $ubuntu bionic-security main universe")
      packages=(python3.8 python3.8-venv python3-distutils protobuf-compiler) python=python3.8 ;;
    bullseye)   # Debian 11, glibc 2.31, Python 3.9
      mirror=$debian keyring=$debian_keyring components=main
      sources=("deb $debian bullseye main" "deb $debian bullseye-updates main"
               "deb http://deb.debian.org/debian-security bullseye-security main")
      packages=(python3 python3-venv protobuf-compiler) python=python3 ;;
    xenial)     # Ubuntu 16.04, glibc 2.23; its Python 3.5 is below requires-python: native parts only
      mirror=$ubuntu keyring=$ubuntu_keyring components=main
      sources=("deb $ubuntu xenial main" "deb $ubuntu xenial-updates main" "deb $ubuntu xenial-security main")
      packages=() python= ;;
    *) return 1 ;;
  esac
}
for name in "${distributions[@]}"; do
  describe "$name" || { echo "check-old-linux: unknown distribution $name (bionic, bullseye, xenial)" >&2; exit 2; }
done

apt_install() {
  apt-get -q -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "$@" >&2
}

# The tools: debootstrap and the archive keys, installed only when missing.
command -v debootstrap >/dev/null || apt_install debootstrap
[ -e "$debian_keyring" ] || apt_install debian-archive-keyring

# Ubuntu's archive key: the ubuntu-keyring package where apt offers it; Debian 12 does not (it is
# in Debian 13), so then its .deb is fetched from Debian 13's archive with a private source list
# and package lists (apt checks it against Debian's archive keys; the machine's apt configuration
# is left as it is) and only its keyring file is kept, in the cache.
need_ubuntu_keyring() {
  [ -e "$ubuntu_keyring" ] && return
  if apt-cache policy ubuntu-keyring 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt_install ubuntu-keyring
    return
  fi
  local kept=$cache/ubuntu-keyring/ubuntu-archive-keyring.gpg apt_dir
  if [ ! -e "$kept" ]; then
    apt_dir=$(mktemp -d) || return 1
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/deb" "${kept%/*}" || return 1
    echo "deb $debian trixie main" > "$apt_dir/sources.list"
    local apt_options=(-q -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
                       -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
                       -o APT::Sandbox::User=root)
    if ! { apt-get "${apt_options[@]}" update >&2 &&
           (cd "$apt_dir/deb" && apt-get "${apt_options[@]}" download ubuntu-keyring >&2) &&
           dpkg-deb -x "$apt_dir"/deb/ubuntu-keyring_*.deb "$apt_dir/extracted" &&
           cp "$apt_dir/extracted/usr/share/keyrings/ubuntu-archive-keyring.gpg" "$kept.new" &&
           mv "$kept.new" "$kept"; }; then
      rm -rf "$apt_dir"
      return 1
    fi
    rm -rf "$apt_dir"
  fi
  ubuntu_keyring=$kept
}

# mounts_under DIR: whether anything is mounted at or below DIR (in this mount namespace).
mounts_under() {
  awk -v dir="$1" '$5 == dir || index($5, dir "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# remove_tree DIR: DIR and what it holds, never crossing into another file system; refused while
# something is mounted below it.
remove_tree() {
  if mounts_under "$1"; then
    echo "check-old-linux: something is mounted under $1: not removing it" >&2
    return 1
  fi
  rm -rf --one-file-system "$1"
}

# enter ROOT COMMAND...: runs COMMAND in ROOT (chroot) with a clean environment, from inside the
# mount namespace that `in_root` makes (see there). Runs as `bash -c` there, so it is self-contained.
# shellcheck disable=SC2317 # called through in_root's bash -c
enter() {
  set -eu
  local rootfs=$1 node
  shift
  # /proc: the new PID namespace's; what would change the host's kernel (sysctl, ...) read-only
  mount -t proc -o nosuid,nodev,noexec proc "$rootfs/proc"
  for node in sys sysrq-trigger irq bus fs; do
    if [ -e "$rootfs/proc/$node" ]; then
      mount --bind "$rootfs/proc/$node" "$rootfs/proc/$node"
      mount -o remount,bind,ro "$rootfs/proc/$node"
    fi
  done
  # /dev: a tmpfs over the root's own, holding files on which the host's nodes are bound
  # read-only (reads and writes reach the device; chmod, chown, rename do not reach the host's node:
  # xenial's makedev, upgraded in the root, says "mv: cannot move 'null-' to 'null'", as meant)
  mount -t tmpfs -o mode=755,nosuid cblob-dev "$rootfs/dev"
  for node in null zero full random urandom; do
    : > "$rootfs/dev/$node"
    mount --bind "/dev/$node" "$rootfs/dev/$node"
    mount -o remount,bind,ro,nosuid "$rootfs/dev/$node"
  done
  mkdir "$rootfs/dev/shm" "$rootfs/dev/pts"
  mount -t tmpfs -o mode=1777,nosuid,nodev cblob-shm "$rootfs/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=620 cblob-pts "$rootfs/dev/pts"  # a new, private instance
  ln -s pts/ptmx "$rootfs/dev/ptmx"
  ln -s /proc/self/fd "$rootfs/dev/fd"
  ln -s /proc/self/fd/0 "$rootfs/dev/stdin"
  ln -s /proc/self/fd/1 "$rootfs/dev/stdout"
  ln -s /proc/self/fd/2 "$rootfs/dev/stderr"
  mount -t tmpfs -o mode=1777,nosuid cblob-tmp "$rootfs/tmp"
  exec chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
}

# in_root ROOT COMMAND...: COMMAND inside ROOT, in new mount and PID namespaces whose mounts are
# private: the mounts `enter` makes vanish with the namespace and none reaches the host's table.
in_root() {
  unshare --mount --propagation private --pid --fork --kill-child \
      bash -c "$(declare -f enter); enter \"\$@\"" enter "$@"
}

# make_root NAME DIR: the root file system, unless DIR/complete says it is made with these
# packages (when only they changed, they are installed into it).
make_root() {
  local name=$1 dir=$2
  if [ -e "$dir/complete" ]; then
    [ "$(sed -n 's/^packages: //p' "$dir/complete")" = "${packages[*]}" ] && return
    echo "-- $name: the distribution's packages changed: installing them into $dir" >&2
  else
    if [ -e "$dir" ]; then remove_tree "$dir" || return 1; fi
    mkdir -p "$dir" || return 1
    echo "-- $name: debootstrap --variant=minbase into $dir" >&2
    # debootstrap mounts /proc and /sys in the root while it works: in a namespace of its own
    unshare --mount --propagation private \
        debootstrap --variant=minbase --keyring="$keyring" --components="$components" \
        "$name" "$dir" "$mirror" >&2 || return 1
    real_dir_in "$dir" etc/apt && real_dir_in "$dir" usr/sbin || return 1
    rm -f "$dir/etc/apt/sources.list" "$dir/usr/sbin/policy-rc.d" || return 1   # a link there would lead out
    printf '%s\n' "${sources[@]}" > "$dir/etc/apt/sources.list" || return 1
    # no package's service starts in the root (invoke-rc.d asks policy-rc.d; 101: not allowed)
    printf '#!/bin/sh\nexit 101\n' > "$dir/usr/sbin/policy-rc.d" && chmod 755 "$dir/usr/sbin/policy-rc.d" || return 1
  fi
  put_resolv_conf "$dir" || return 1
  in_root "$dir" apt-get -q update >&2 || return 1
  in_root "$dir" apt-get -q -y dist-upgrade >&2 || return 1
  if [ ${#packages[@]} -gt 0 ]; then
    in_root "$dir" apt-get -q -y install --no-install-recommends "${packages[@]}" >&2 || return 1
  fi
  in_root "$dir" apt-get -q clean >&2 || return 1
  # the last step: a root without it is made again
  printf 'made %s\npackages: %s\n' "$(date -u +%FT%TZ)" "${packages[*]}" > "$dir/complete"
}

# real_dir_in ROOT SUBDIR: whether ROOT/SUBDIR is a folder inside ROOT, no link on the way leading
# out of it: what is written from the host into the root goes there, never through such a link.
real_dir_in() {
  local root_path sub_path
  root_path=$(realpath -e "$1") && sub_path=$(realpath -e "$1/$2") || return 1
  [ -d "$sub_path" ] && [ "$sub_path" = "$root_path/$2" ] && return
  echo "check-old-linux: $1/$2 is not a folder of the root: not writing there" >&2
  return 1
}

# put_resolv_conf DIR: the host's resolver into the root (removing first what is there: a
# symbolic link there, relative to the host, would lead out of the root).
put_resolv_conf() {
  real_dir_in "$1" etc && rm -f "$1/etc/resolv.conf" && cp /etc/resolv.conf "$1/etc/resolv.conf"
}

# The caffemodel the native check converts: the real LeNet of ../shared/data/caffe when there,
# else the repository's small sample (said so).
model=$data_dir/lenet_iter_10000.caffemodel
if [ ! -e "$model" ]; then
  echo "check-old-linux: $model is absent: the native checks convert samples/tiny_lenet.caffemodel" >&2
  model=$root/samples/tiny_lenet.caffemodel
fi

# The certificates this machine trusts ($PIP_CERT, else $SSL_CERT_FILE, else the system's bundle),
# which pip in the root uses: a network whose egress re-signs TLS with an authority of its own (as
# this project's machines' does) is reached only with them.
host_ca=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}

# stage DIR: what a run sees, in DIR/check (made anew): the wheel, unzipped beside it, the tests
# with what they read (laid out as in the repository: cblob/{bindings/python/tests,samples,proto}
# and shared/data/caffe, where conftest.py looks), the test pins.
stage() {
  local check=$1/check
  remove_tree "$check" &&
    mkdir -p "$check/cblob/bindings/python" "$check/shared/data" "$check/unzipped" "$check/out" &&
    cp "$wheel" "$check/" &&
    unzip -q "$wheel" -d "$check/unzipped" &&
    cp -r "$here/tests" "$check/cblob/bindings/python/tests" &&
    find "$check/cblob/bindings/python/tests" -name __pycache__ -prune -exec rm -rf {} + &&
    cp -r "$root/samples" "$root/proto" "$check/cblob/" &&
    { [ ! -d "$data_dir" ] || cp -r "$data_dir" "$check/shared/data/caffe"; } &&
    cp "$model" "$check/model.caffemodel" &&
    grep -E "^(numpy|protobuf|pytest)==" "$requirements" > "$check/pins.txt" &&
    { [ ! -e "$host_ca" ] || cp "$host_ca" "$check/ca-certificates.crt"; } &&
    put_resolv_conf "$1"
}

# A summary line per distribution, printed at the end.
summary=()
failed=0

# check NAME: every step for one distribution; the first that fails ends it (each step needs the
# one before), named in the message.
check() {
  local name=$1 dir=$cache/rootfs-$1 glibc python_version="" numpy_version counts="" status
  describe "$name"
  if [ "$keyring" = "$ubuntu_keyring" ]; then
    step="Ubuntu's archive key"; need_ubuntu_keyring || return 1
    keyring=$ubuntu_keyring
  fi
  step="root file system ($dir)"; make_root "$name" "$dir" || return 1
  step="copying the wheel and the tests into the root"; stage "$dir" || return 1
  step="ldd --version"
  glibc=$(in_root "$dir" ldd --version | sed -n 1p) || return 1
  echo "-- $name: $glibc"
  local program=/check/unzipped/cblob/bin/cblob
  step="the wheel's cblob info (unzipped)"; in_root "$dir" "$program" info || return 1
  step="the wheel's cblob convert of a .caffemodel to .npz (unzipped)"
  in_root "$dir" "$program" convert /check/model.caffemodel -o /check/out/model.npz || return 1
  step="the wheel's cblob inspect of the .npz (unzipped)"
  in_root "$dir" "$program" inspect --shapes /check/out/model.npz || return 1
  if [ -z "$python" ]; then
    summary+=("$name: $glibc; native parts passed (no Python >= $floor in the distribution)")
    return 0
  fi
  step="$python (requires-python >= $floor)"
  python_version=$(in_root "$dir" "$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') || return 1
  in_root "$dir" "$python" -c "import sys; sys.exit(sys.version_info[:2] < tuple(map(int, '$floor'.split('.'))))" || return 1
  step="$python -m venv"; in_root "$dir" "$python" -m venv /check/venv || return 1
  # PyPI named by its present address: bionic's pip 9 would ask pypi.python.org, which a network
  # that allows only the present names does not resolve
  local pip=(/check/venv/bin/python -m pip --disable-pip-version-check --quiet)
  local index=(--index-url https://pypi.org/simple)
  [ ! -e "$dir/check/ca-certificates.crt" ] || pip=(/usr/bin/env PIP_CERT=/check/ca-certificates.crt "${pip[@]}")
  # bionic's venv pip (9.0) predates the manylinux2014 tag (pip 19.3) and manylinux_2_17 (20.3):
  # the venv's pip first (a version floor: pip 9 exits 0 when it cannot reach the index)
  step="pip install --upgrade pip>=20.3"
  in_root "$dir" "${pip[@]}" install "${index[@]}" --upgrade "pip>=20.3" || return 1
  step="pip install the wheel and the test pins"
  in_root "$dir" "${pip[@]}" install "${index[@]}" "/check/${wheel##*/}" -r /check/pins.txt || return 1
  step="python -c 'import cblob'"
  in_root "$dir" /check/venv/bin/python -c \
      'import cblob; print("cblob", cblob.version(), "package", cblob.__version__, "ABI", cblob.abi_version(), "from", cblob.library_path())' \
      || return 1
  numpy_version=$(in_root "$dir" /check/venv/bin/python -c 'import numpy; print(numpy.__version__)') || return 1
  step="check_fresh_venv.py (a model loads; libcblob, BLIS and protobuf-c are the wheel's)"
  in_root "$dir" /bin/sh -c 'cd /check/out && exec /check/venv/bin/python -I \
      /check/cblob/bindings/python/tests/check_fresh_venv.py /check/venv /check/model.caffemodel' || return 1
  step="the package's cblob info"; in_root "$dir" /check/venv/bin/cblob info >/dev/null || return 1
  step="pytest"
  status=0
  in_root "$dir" /bin/sh -c 'cd /check/cblob/bindings/python/tests &&
      exec /check/venv/bin/python -m pytest -p no:cacheprovider -q -rs' | tee "$dir/check/pytest.log" || status=$?
  counts=$(grep -E "^=* ?([0-9]+ (passed|failed|errors?|skipped)|no tests ran)" "$dir/check/pytest.log" | tail -n 1 | sed 's/=//g; s/^ *//; s/ *$//')
  summary+=("$name: $glibc; Python $python_version, NumPy $numpy_version; pytest: ${counts:-no summary}")
  return "$status"
}

for name in "${distributions[@]}"; do
  echo "== $name"
  step=""
  if ! check "$name"; then
    echo "check-old-linux: $name: $step failed" >&2
    summary+=("$name: FAILED at: $step")
    failed=1
  fi
done
echo "== summary ($(date -u +%FT%TZ), ${wheel##*/})"
printf '%s\n' "${summary[@]}"
exit "$failed"
