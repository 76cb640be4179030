#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest driver of the Rust binding: cargo test (unit, integration and doc tests; the GPU tests
# once more against the test doubles of the CUDA libraries), cargo doc and cargo package of both
# crates, offline, against this build's libcblob, with warnings as errors (the safe crate warns
# on a public item without documentation); the DLPack mirror is checked against dlpack_layout.c's
# output; cblob-sys finds the library through pkg-config when CBLOB_LIB_DIR is unset. Outputs go
# to CBLOB_OUT_DIR.
source "$(dirname "$0")/../common.sh"
# rustup installs cargo in ~/.cargo/bin, which CTest's PATH may lack.
cargo=$(find_program cargo "${CARGO_HOME:-$HOME/.cargo}/bin") || skip "cargo not found (PATH, \$CARGO_HOME/bin or ~/.cargo/bin)"
export PATH="$(dirname "$cargo"):$PATH"
export CBLOB_LIB_DIR="$CBLOB_LIBRARY_DIR"
export LD_LIBRARY_PATH="$CBLOB_LIBRARY_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CARGO_TARGET_DIR="$CBLOB_OUT_DIR/target"
export RUSTFLAGS="-D warnings" RUSTDOCFLAGS="-D warnings"
cd "$BINDINGS_DIR/rust"
"$cargo" --version
dlpack_layout
"$cargo" test --offline --locked --workspace --all-targets
# The collectives on two ranks (examples/mpi_two_ranks.rs; --all-targets built it as a test).
if mpi_ranks_or_skip; then
  "$cargo" build --offline --locked -p cblob --example mpi_two_ranks
  # shellcheck disable=SC2086 # CBLOB_MPIEXEC holds the launcher and its flags
  timeout 120 $CBLOB_MPIEXEC -np 2 "$CARGO_TARGET_DIR/debug/examples/mpi_two_ranks"
fi
run_with_fake_gpu "$cargo" test --offline --locked -p cblob --test gpu
"$cargo" test --offline --locked --workspace --doc
"$cargo" doc --offline --locked --workspace --no-deps

# The crates as they would be published (--workspace: cblob's dependency on cblob-sys resolves to
# the cblob-sys packaged beside it; --no-verify: building them would need libcblob). Each holds
# its sources and the license text.
rm -rf "$CARGO_TARGET_DIR/package"
"$cargo" package --offline --locked --workspace --no-verify --allow-dirty
for crate in cblob-sys cblob; do
  file="$CARGO_TARGET_DIR/package/$crate-$("$cargo" pkgid --offline -p "$crate" | sed 's/.*[@#]//').crate"
  contents=$(tar tzf "$file")
  for f in Cargo.toml src/lib.rs LICENSE; do
    grep -qx "[^/]*/$f" <<<"$contents" || { echo "FAIL: $(basename "$file") lacks $f"; exit 1; }
  done
  echo "$(basename "$file"): $(wc -l <<<"$contents") files"
done

# Without CBLOB_LIB_DIR, cblob-sys asks pkg-config: here the build tree's cblob-uninstalled.pc.
: "${CBLOB_PKG_CONFIG_DIR:?}"
found=$(env -u CBLOB_LIB_DIR PKG_CONFIG_PATH="$CBLOB_PKG_CONFIG_DIR" "$cargo" build --offline --locked -p cblob-sys -vv 2>&1 |
        sed -n 's/.*cargo:rustc-link-search=native=//p' | sort -u)
[ "$found" = "$CBLOB_LIBRARY_DIR" ] || { echo "FAIL: through pkg-config, cblob-sys found '$found', not $CBLOB_LIBRARY_DIR"; exit 1; }
echo "cblob-sys through pkg-config: $found"
