// SPDX-License-Identifier: BSD-2-Clause
//! Finds libcblob for the linker: CBLOB_LIB_DIR names the folder holding libcblob.so (a cblob
//! build tree's `src/`, or any install); without it, pkg-config's `cblob` package; without that,
//! the linker's default search path.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    for var in ["CBLOB_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if let Some(dir) = env::var_os("CBLOB_LIB_DIR") {
        let dir = PathBuf::from(dir);
        if !dir.join("libcblob.so").exists() {
            panic!(
                "cblob-sys: CBLOB_LIB_DIR={} holds no libcblob.so (build cblob first, or point at \
                 the folder that holds it)",
                dir.display()
            );
        }
        link(&[dir], &["cblob".to_string()]);
        return;
    }
    match pkg_config() {
        Some((dirs, libs)) => link(&dirs, &libs),
        None => {
            println!(
                "cargo:warning=cblob-sys: CBLOB_LIB_DIR is unset and pkg-config knows no `cblob`; \
                 linking -lcblob from the default search path"
            );
            link(&[], &["cblob".to_string()]);
        }
    }
}

fn link(dirs: &[PathBuf], libs: &[String]) {
    for dir in dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in libs {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
    // Dependents' build scripts read this as DEP_CBLOB_LIB_DIR (for an rpath, say).
    if let Some(dir) = dirs.first() {
        println!("cargo:lib_dir={}", dir.display());
    }
}

/// (library folders, library names) from `pkg-config --libs cblob`, if pkg-config knows cblob.
fn pkg_config() -> Option<(Vec<PathBuf>, Vec<String>)> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(program).args(["--libs", "cblob"]).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let (mut dirs, mut libs) = (Vec::new(), Vec::new());
    for flag in text.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            dirs.push(PathBuf::from(dir));
        } else if let Some(lib) = flag.strip_prefix("-l") {
            libs.push(lib.to_string());
        }
    }
    (!libs.is_empty()).then_some((dirs, libs))
}
