// SPDX-License-Identifier: BSD-2-Clause
//! Links libbench_ffi from BENCH_FFI_DIR.
fn main() {
    println!("cargo:rerun-if-env-changed=BENCH_FFI_DIR");
    let dir = std::env::var("BENCH_FFI_DIR").expect("BENCH_FFI_DIR names the folder holding libbench_ffi.so");
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-lib=dylib=bench_ffi");
}
