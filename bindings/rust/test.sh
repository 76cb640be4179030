#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest driver of the Rust binding: cargo test (unit, integration and doc tests; the GPU tests
# once more against the test doubles of the CUDA libraries) and cargo doc of both crates,
# offline, against this build's libcblob, with warnings as errors; the DLPack mirror is checked
# against dlpack_layout.c's output. Outputs go to CBLOB_OUT_DIR.
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
"$cargo" test --offline --locked --workspace
run_with_fake_gpu "$cargo" test --offline --locked -p cblob --test gpu
"$cargo" doc --offline --locked --workspace --no-deps
