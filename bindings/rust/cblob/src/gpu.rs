// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): set_gpu_data (a device buffer with a
// release closure) and the module's documentation. Error::is_no_gpu (types.rs), the Versions
// record (records_generated.rs) and the one-call functions (generated.rs) are generated.
//! The GPU backend (CUDA): what the machine has, and the kernel cache.
//!
//! The library loads and works without a GPU; the calls that need one then fail with the status
//! that says why ([`Status::NoDriver`](crate::Status::NoDriver),
//! [`Status::StubDriver`](crate::Status::StubDriver),
//! [`Status::NoDevice`](crate::Status::NoDevice), [`Status::DriverTooOld`](crate::Status::DriverTooOld),
//! [`Status::NvrtcMissing`](crate::Status::NvrtcMissing),
//! [`Status::CublasMissing`](crate::Status::CublasMissing)),
//! which [`Error::is_no_gpu`](crate::Error::is_no_gpu) recognises. Device work of a blob runs on its context's device and
//! stream: see [`Context::set_device`](crate::Context::set_device) and [`Blob::gpu_ptr`](crate::Blob::gpu_ptr).
//!
//! ```
//! match cblob::gpu::probe() {
//!     Ok(devices) => println!("{devices} CUDA device(s):\n{}", cblob::gpu::report()?),
//!     Err(e) if e.is_no_gpu() => println!("no GPU: {}", e.message()),
//!     Err(e) => return Err(e),
//! }
//! # Ok::<(), cblob::Error>(())
//! ```
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use crate::error::Result;
use crate::memory::{with_access, Access};
use crate::{sys, Blob};

pub use crate::generated::gpu::*;
pub use crate::records::gpu::*;

impl Blob {
    /// Makes a caller's device buffer the blob's device data (Caffe's `set_gpu_data`): the
    /// current copy is then on the device and cblob never frees the buffer. `release`, if any,
    /// runs once when cblob lets go of the buffer (the blob is dropped or given another one),
    /// on whichever thread drops the last holder; it must not panic (a panic there aborts). On
    /// failure `release` is dropped without running. The size rule and sharing are those of
    /// [`Blob::set_cpu_data`].
    ///
    /// # Safety
    /// `ptr` must be device memory of the context's device covering `size_bytes` (cblob checks
    /// this with the driver) that stays allocated until `release` runs.
    pub unsafe fn set_gpu_data(&mut self, ptr: *mut c_void, size_bytes: usize, release: Option<Box<dyn FnOnce() + Send>>) -> Result<()> {
        let callback: Option<Box<Box<dyn FnOnce() + Send>>> = release.map(Box::new);
        let (function, user_data): (sys::cblob_release_fn, *mut c_void) = match callback {
            Some(b) => (Some(run_release), Box::into_raw(b).cast()),
            None => (None, ptr::null_mut()),
        };
        let data = Arc::clone(&self.data);
        let result = with_access(&[(&data, Access::Write)], || {
            self.reshaping(|raw| sys::cblob_blob_set_gpu_data(raw, ptr, size_bytes, function, user_data))
        });
        if result.is_err() && !user_data.is_null() {
            // On failure the library never calls release, so the box is still ours.
            drop(Box::from_raw(user_data.cast::<Box<dyn FnOnce() + Send>>()));
        }
        result
    }
}

/// The release callback of set_gpu_data: runs and frees the caller's closure.
unsafe extern "C" fn run_release(_ptr: *mut c_void, user_data: *mut c_void) {
    let release = Box::from_raw(user_data.cast::<Box<dyn FnOnce() + Send>>());
    release();
}
