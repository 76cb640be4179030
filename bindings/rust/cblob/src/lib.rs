// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the crate's front page, modules and
// re-exports, and abi_version (split into major and minor).
//! Safe Rust bindings to cblob: Caffe-style blobs (N-d arrays holding `data` and `diff`,
//! synced lazily between host and GPU) behind cblob's versioned C ABI, with Caffe's files
//! ([`Model`], [`proto`]), the GPU ([`gpu`]), NeoML's blob operations ([`Window`],
//! [`Mapping`], and the layout, copy, transpose, merge, split and fill methods of [`Blob`]) and
//! DLPack ([`dlpack`]: [`Blob::to_dlpack`], [`Blob::from_dlpack`]), and arenas and collectives
//! ([`Blob::arena`], [`Comm`], [`Request`]) over MPI or NCCL.
//!
//! ```
//! use cblob::{Blob, Context, DType, Model, Part};
//!
//! let ctx = Context::new()?;
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../samples/tiny_lenet.caffemodel");
//! let model = Model::open_file(&ctx, path)?; // samples/tiny_lenet.caffemodel
//! let conv1 = &model.layer("conv1").expect("a conv1 layer").blobs[0];
//! assert_eq!(conv1.shape_string(), "4 1 3 3 (36)");
//!
//! let mut weights = Blob::new(&ctx, DType::Float32, &[2, 3])?;
//! weights.data_mut::<f32>()?.fill(1.0);
//! weights.diff_mut::<f32>()?.fill(0.25);
//! weights.update()?; // data -= diff
//! assert_eq!(weights.asum(Part::Data)?, 4.5);
//! # Ok::<(), cblob::Error>(())
//! ```
//!
//! # Ownership
//!
//! [`Context`] and [`Blob`] own one hold on a library handle each and drop it in `Drop`; a blob
//! keeps its context alive inside the library. Host memory is seen through [`View`] and
//! [`ViewMut`], which borrow their blob, so a view can neither outlive the blob nor survive a
//! reshape or a buffer change (the borrow checker refuses). Blobs that share memory
//! ([`Blob::share`]) are checked at run time instead: see [`Blob`]. A [`Window`] borrows its
//! parent and is counted with it; a [`Mapping`] borrows its blob mutably and unmaps on drop. A
//! [`Model`] is a plain value whose layers own their blobs. A [`DlpackTensor`] owns a DLPack
//! tensor and calls its deleter on drop, unless it was handed over (`into_raw`, or imported
//! into a blob).
//!
//! # Errors
//!
//! Every call that can fail returns [`Result<T>`], whose [`Error`] carries the library's
//! [`Status`] and its message, read on the calling thread right after the failed call:
//!
//! ```
//! # let ctx = cblob::Context::new()?;
//! let mut blob = cblob::Blob::new(&ctx, cblob::DType::Float32, &[4])?;
//! let err = blob.reshape(&[2, -1]).unwrap_err();
//! assert_eq!(err.status(), cblob::Status::Shape);
//! assert!(err.message().starts_with("cblob_blob_reshape: "));
//! assert_eq!(blob.shape(), [4]); // a failed call changes nothing
//! # Ok::<(), cblob::Error>(())
//! ```
//!
//! Getters that cannot fail on a live handle (count, shape, capacity) return plain values. On a
//! machine without a GPU the GPU calls fail with the status that says why, which
//! [`Error::is_no_gpu`] recognises.
//!
//! # Threads
//!
//! The header's rule is that distinct handles may be used from different threads at once, and
//! one handle from several threads only through its pure getters. Hence `Blob`, `Context` and
//! `Model` are `Send` but not `Sync`: move them between threads, or wrap them in a `Mutex` to
//! share. A `Window` is not `Send`: it borrows its parent.
//!
//! ```compile_fail,E0277
//! fn shared_between_threads<T: Sync>() {}
//! shared_between_threads::<cblob::Blob>(); // error: cannot be shared between threads safely
//! ```
//!
//! Error messages are per thread in the library; this crate reads them on the thread that made
//! the failed call, before returning.
//!
//! # Linking
//!
//! `cblob-sys` links `libcblob.so` from `CBLOB_LIB_DIR` when set (a build tree's `src/`
//! folder), otherwise from what `pkg-config cblob` says, otherwise from the linker's default
//! path. At run time the dynamic loader must find `libcblob.so.1` (install it, or set
//! `LD_LIBRARY_PATH`).

#![warn(missing_docs)]

mod blob;
mod call;
mod comm;
mod context;
pub mod dlpack;
mod error;
mod file;
mod generated;
pub mod gpu;
mod mapping;
mod memory;
mod model;
mod neoml;
mod net;
mod progress;
pub mod proto;
#[path = "records_generated.rs"]
mod records;
mod types;
mod window;

pub use blob::{Blob, View, ViewMut};
pub use comm::{finalize_mpi, mpi_library_path, Comm, Request};
pub use mapping::{Mapping, MappingMut};
pub use model::{Layer, Model};
pub use net::Net;
pub use records::{ParamSpec, Rule};
pub use window::Window;
/// The raw C declarations this crate is built on.
pub use cblob_sys as sys;
pub use context::Context;
pub use dlpack::{DlpackTensor, ImportError, LegacyDlpackTensor};
pub use error::{Error, Result};
pub use file::{File, FileNet};
pub use generated::library::*;
pub use types::*;


/// The ABI version the loaded library implements, as `(major, minor)`. Its major equals
/// [`ABI_VERSION_MAJOR`] and its minor is at least [`ABI_VERSION_MINOR`] when the library
/// can serve this crate.
pub fn abi_version() -> (u32, u32) {
    // SAFETY: no arguments.
    let v = unsafe { sys::cblob_abi_version() };
    (v >> 16, v & 0xffff)
}
