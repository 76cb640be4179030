# SPDX-License-Identifier: BSD-2-Clause
# Sourced by the binding test drivers (bindings/*/test.sh), which CTest runs with:
#   CBLOB_LIBRARY_FILE           the libcblob.so.1.x.y of this build
#   CBLOB_VERSION                the project's version (x.y.z)
#   CBLOB_INCLUDE_DIR            the public headers of this source tree
#   CBLOB_BUILD_INCLUDE_DIR      the headers this build stages (DLPack's as cblob/dlpack.h)
#   CBLOB_C_COMPILER             the C compiler of this build
#   CBLOB_OUT_DIR                where build outputs go (inside the CMake build tree)
#   CBLOB_PKG_CONFIG_DIR         the folder of this build's cblob-uninstalled.pc (pkg-config)
#   CBLOB_CAFFE_DATA_DIR         the real Caffe files (the tests skip their part when it is absent)
#   CBLOB_FAKE_GPU_ENVIRONMENT   VAR=value words that load the test doubles of the CUDA libraries
#   CBLOB_MPI_LIBRARY_FILE       the libcblob_mpi.so.1.x.y of this build, when it built one
#   CBLOB_MPIEXEC                the launcher the collectives' tests start two ranks with (words)
#   CBLOB_MPI_MISSING            why libcblob_mpi was not built (the suites skip their collectives)
set -euo pipefail
: "${CBLOB_LIBRARY_FILE:?}" "${CBLOB_INCLUDE_DIR:?}" "${CBLOB_BUILD_INCLUDE_DIR:?}" "${CBLOB_OUT_DIR:?}"
CBLOB_LIBRARY_DIR=$(dirname "$CBLOB_LIBRARY_FILE")
BINDINGS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The source tree's root, for tests that read its files (samples/) from elsewhere.
export CBLOB_SOURCE_DIR=$(cd "$BINDINGS_DIR/.." && pwd)
mkdir -p "$CBLOB_OUT_DIR"

# A missing toolchain is a skip (CTest's SKIP_RETURN_CODE), with the reason printed.
skip() {
  echo "SKIPPED: $*"
  exit 77
}

# Finds a program on PATH or in the given folders; prints its path.
find_program() {
  local name=$1; shift
  local found
  found=$(command -v "$name" 2>/dev/null) && { echo "$found"; return 0; }
  for dir in "$@"; do
    [ -x "$dir/$name" ] && { echo "$dir/$name"; return 0; }
  done
  return 1
}

# Runs a command (a suite's GPU tests) again with the test doubles of the CUDA driver, cuBLAS and
# NVRTC loaded, telling the tests to expect a GPU; says so when there are no doubles to load.
run_with_fake_gpu() {
  if [ -z "${CBLOB_FAKE_GPU_ENVIRONMENT:-}" ]; then
    echo "GPU tests against the test double of the CUDA driver: not run (CBLOB_FAKE_GPU_ENVIRONMENT is not set)"
    return 0
  fi
  echo "== the GPU tests again, against the test doubles of the CUDA libraries"
  # shellcheck disable=SC2086 # the variable holds separate VAR=value words
  env CBLOB_BINDINGS_EXPECT_GPU=1 $CBLOB_FAKE_GPU_ENVIRONMENT "$@"
}

# Compiles and runs dlpack_layout.c: DLPack's struct sizes and field offsets as the C compiler
# lays them out from <cblob/dlpack.h>, into a file the suites check their mirrors of the structs
# against (CBLOB_DLPACK_LAYOUT). A failure here fails the suite.
dlpack_layout() {
  local cc=${CBLOB_C_COMPILER:-cc}
  "$cc" -std=c11 -Wall -Wextra -Werror -I"$CBLOB_BUILD_INCLUDE_DIR" \
      -o "$CBLOB_OUT_DIR/dlpack_layout" "$BINDINGS_DIR/dlpack_layout.c"
  "$CBLOB_OUT_DIR/dlpack_layout" > "$CBLOB_OUT_DIR/dlpack_layout.txt"
  export CBLOB_DLPACK_LAYOUT="$CBLOB_OUT_DIR/dlpack_layout.txt"
}

# The suites' collectives run two ranks under mpirun with this build's libcblob_mpi
# (CBLOB_MPI_LIBRARY); Open MPI refuses root without these (CI runs as root). mpi_ranks_or_skip
# prints why they cannot run and returns 1.
if [ -n "${CBLOB_MPI_LIBRARY_FILE:-}" ]; then
  export CBLOB_MPI_LIBRARY="$CBLOB_MPI_LIBRARY_FILE"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi_ranks_or_skip() {
  if [ -z "${CBLOB_MPI_LIBRARY_FILE:-}" ] || [ -z "${CBLOB_MPIEXEC:-}" ]; then
    echo "SKIPPED: the collectives on two ranks: ${CBLOB_MPI_MISSING:-libcblob_mpi or mpirun not given (CBLOB_MPI_LIBRARY_FILE, CBLOB_MPIEXEC)}"
    return 1
  fi
}
