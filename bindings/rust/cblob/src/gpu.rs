// SPDX-License-Identifier: BSD-2-Clause
//! The GPU backend (CUDA): what the machine has, and the kernel cache.
//!
//! The library loads and works without a GPU; the calls that need one then fail with the status
//! that says why ([`Status::NoDriver`], [`Status::StubDriver`], [`Status::NoDevice`],
//! [`Status::DriverTooOld`], [`Status::NvrtcMissing`], [`Status::CublasMissing`]), which
//! [`Error::is_no_gpu`] recognises. Device work of a blob runs on its context's device and
//! stream: see [`Context::set_device`] and [`Blob::gpu_ptr`].
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
use std::path::PathBuf;
use std::ptr;
use std::sync::Arc;

use crate::error::{check, infallible, read_text, Error, Result};
use crate::memory::{with_access, Access};
use crate::{sys, Blob, CacheMode, Context, Part, Status};

/// Loads the GPU stack if it is not loaded yet and returns the number of CUDA devices, or the
/// error that says why the GPU cannot be used.
pub fn probe() -> Result<usize> {
    let mut count = 0;
    // SAFETY: a valid out-pointer.
    check(unsafe { sys::cblob_gpu_probe(&mut count) })?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// The versions of the GPU libraries found, encoded as CUDA does (`major * 1000 + minor * 10`:
/// 13000 is 13.0), 0 for one that could not be loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    /// The CUDA version the driver supports.
    pub driver: i32,
    /// NVRTC's version.
    pub nvrtc: i32,
    /// cuBLAS's version.
    pub cublas: i32,
}

/// The versions found; never fails for want of a GPU.
pub fn versions() -> Result<Versions> {
    let mut v = Versions { driver: 0, nvrtc: 0, cublas: 0 };
    // SAFETY: valid out-pointers.
    check(unsafe { sys::cblob_gpu_versions(&mut v.driver, &mut v.nvrtc, &mut v.cublas) })?;
    Ok(v)
}

/// The name of a CUDA device, as the driver reports it.
pub fn device_name(device_index: i32) -> Result<String> {
    // SAFETY: buffer and size come from read_text.
    read_text(|buffer, size, out| unsafe { sys::cblob_gpu_device_name(device_index, buffer, size, out) })
}

/// A report of the GPU stack, one item per line (what `cblob info` prints); never fails for
/// want of a GPU.
pub fn report() -> Result<String> {
    // SAFETY: as in device_name.
    read_text(|buffer, size, out| unsafe { sys::cblob_gpu_report(buffer, size, out) })
}

/// Where compiled kernels are kept (`CBLOB_KERNEL_CACHE`, or memory after the cache folder
/// turned out not to be writable).
pub fn kernel_cache_mode() -> Result<CacheMode> {
    let mut mode = 0;
    // SAFETY: a valid out-pointer.
    infallible(unsafe { sys::cblob_kernel_cache_mode(&mut mode) });
    CacheMode::from_raw(mode).ok_or_else(|| Error::new(Status::Internal, format!("cache mode {mode} is unknown to this crate")))
}

/// The kernel cache folder, whatever the mode (empty when none can be named).
pub fn kernel_cache_dir() -> Result<PathBuf> {
    // SAFETY: as in device_name.
    read_text(|buffer, size, out| unsafe { sys::cblob_kernel_cache_dir(buffer, size, out) }).map(PathBuf::from)
}

impl Error {
    /// Whether this is one of the statuses that say the GPU stack cannot be used on this
    /// machine (no driver, a stub driver, no device, an old driver, no NVRTC, no cuBLAS).
    pub fn is_no_gpu(&self) -> bool {
        matches!(
            self.status(),
            Status::NoDriver | Status::StubDriver | Status::NoDevice | Status::DriverTooOld | Status::NvrtcMissing | Status::CublasMissing
        )
    }
}

impl Context {
    /// Chooses the CUDA device this context's blobs use (0 unless set) and opens it. A context
    /// keeps the device it opened: choosing another then is [`Status::State`].
    pub fn set_device(&mut self, device_index: i32) -> Result<()> {
        // SAFETY: a live context used by this thread alone (&mut).
        check(unsafe { sys::cblob_context_set_device(self.as_ptr(), device_index) })
    }

    /// The index of the context's CUDA device (0 unless set).
    pub fn device(&self) -> i32 {
        let mut index = 0;
        // SAFETY: a pure getter on a live context.
        infallible(unsafe { sys::cblob_context_device(self.as_ptr(), &mut index) });
        index
    }

    /// Queues the context's device work on a caller's CUDA stream (`CUstream` or
    /// `cudaStream_t`; NULL is the default stream). cblob first waits for work queued on the
    /// previous stream.
    ///
    /// # Safety
    /// `stream` must be NULL or a stream of the context's device that stays valid until
    /// another is set or the context and every blob made in it are gone.
    pub unsafe fn set_stream(&mut self, stream: *mut c_void) -> Result<()> {
        check(sys::cblob_context_set_stream(self.as_ptr(), stream))
    }

    /// The stream the context queues device work on (NULL for the default stream).
    pub fn stream(&self) -> *mut c_void {
        let mut stream = ptr::null_mut();
        // SAFETY: a pure getter on a live context.
        infallible(unsafe { sys::cblob_context_stream(self.as_ptr(), &mut stream) });
        stream
    }

    /// Waits until the device work this context queued (asynchronous pushes included) is done;
    /// at once for a context that never used a GPU.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live context.
        check(unsafe { sys::cblob_context_synchronize(self.as_ptr()) })
    }

    /// The context's log: warnings that were not errors of the call that met them (a kernel
    /// cache folder that cannot be written, say), one per line, oldest first.
    pub fn log(&self) -> Result<String> {
        // SAFETY: a live context; buffer and size come from read_text.
        read_text(|buffer, size, out| unsafe { sys::cblob_context_log(self.as_ptr(), buffer, size, out) })
    }

    /// Empties the context's log.
    pub fn clear_log(&mut self) -> Result<()> {
        // SAFETY: a live context used by this thread alone.
        check(unsafe { sys::cblob_context_clear_log(self.as_ptr()) })
    }

    /// Compiles every GPU kernel ahead of first use and returns how many kernel families were
    /// compiled now (the others were cached). With `compute_capability` 0, for this context's
    /// device (opening it); with one such as 80 or 90, for that architecture into the disk
    /// cache, with no GPU needed (only NVRTC).
    pub fn warm_up_kernels(&self, compute_capability: i32) -> Result<i32> {
        let mut compiled = 0;
        // SAFETY: a live context and a valid out-pointer.
        check(unsafe { sys::cblob_kernel_cache_warm_up(self.as_ptr(), compute_capability, &mut compiled) })?;
        Ok(compiled)
    }
}

impl Blob {
    /// A read-only device pointer to data or diff (Caffe's `gpu_data` / `gpu_diff`): copies
    /// from the host when the current copy is there. NULL for a blob with no elements. The
    /// pointer is for device code (kernels, other CUDA libraries); it stays valid as long as a
    /// host view would, but nothing ties its use to the blob's lifetime: dereferencing it is
    /// the caller's responsibility.
    pub fn gpu_ptr(&self, part: Part) -> Result<*const c_void> {
        let mut ptr = ptr::null();
        with_access(&[(self.memory(part), Access::Read)], || {
            // SAFETY: a live handle used by this thread alone; a valid out-pointer.
            check(unsafe { sys::cblob_blob_gpu_ptr(self.as_ptr(), part.raw(), &mut ptr) })
        })?;
        Ok(ptr)
    }

    /// A writable device pointer to data or diff (Caffe's `mutable_gpu_data`): syncs like
    /// [`Blob::gpu_ptr`], then marks the device copy current, so the next host view copies
    /// back. Fails with [`Status::State`] while a host view of this memory is alive.
    pub fn mutable_gpu_ptr(&mut self, part: Part) -> Result<*mut c_void> {
        let mut ptr = ptr::null_mut();
        with_access(&[(self.memory(part), Access::Write)], || {
            // SAFETY: as in gpu_ptr.
            check(unsafe { sys::cblob_blob_mutable_gpu_ptr(self.as_ptr(), part.raw(), &mut ptr) })
        })?;
        Ok(ptr)
    }

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

    /// Starts copying data or diff to the device on the context's stream and marks it synced
    /// at once (Caffe's `async_gpu_push`); the host copy must be the current one
    /// ([`Status::State`] otherwise). Until [`Context::synchronize`] returns, the host copy must
    /// not change (the copy reads it) and the device copy may only be used by work on the same
    /// stream.
    pub fn async_push(&mut self, part: Part) -> Result<()> {
        with_access(&[(self.memory(part), Access::Read)], || {
            // SAFETY: a live handle used by this thread alone.
            check(unsafe { sys::cblob_blob_async_push(self.as_ptr(), part.raw()) })
        })
    }
}

/// The release callback of set_gpu_data: runs and frees the caller's closure.
unsafe extern "C" fn run_release(_ptr: *mut c_void, user_data: *mut c_void) {
    let release = Box::from_raw(user_data.cast::<Box<dyn FnOnce() + Send>>());
    release();
}
