// SPDX-License-Identifier: BSD-2-Clause
use std::ptr::{self, NonNull};

use crate::error::{check, Error, Result};
use crate::{sys, Status};

/// What Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and the device.
///
/// Every blob is created in a context and keeps it alive (inside the library), so dropping a
/// `Context` while blobs made in it live is fine.
///
/// `Send` but not `Sync`: the header lets one handle be used from several threads at once only
/// for its pure getters, and creating a blob in a context is not one. To create blobs from
/// several threads, give each thread its own context or wrap this one in a `Mutex`.
///
/// ```
/// let mut ctx = cblob::Context::new()?;
/// assert_eq!(ctx.mode()?, cblob::Mode::Cpu);
/// // Without a usable GPU, GPU mode fails with the reason and the mode stays CPU.
/// if let Err(e) = ctx.set_mode(cblob::Mode::Gpu) {
///     println!("no GPU: {e}");
///     assert_eq!(ctx.mode()?, cblob::Mode::Cpu);
/// }
/// # Ok::<(), cblob::Error>(())
/// ```
#[derive(Debug)]
pub struct Context {
    raw: NonNull<sys::cblob_context>,
}

// SAFETY: a context handle may be used from any thread (header, Threads: distinct handles may be
// used from different threads at once); it is not Sync (see the type's documentation).
unsafe impl Send for Context {}

impl Context {
    /// A new context in CPU mode.
    pub fn new() -> Result<Context> {
        let mut raw = ptr::null_mut();
        // SAFETY: raw is a valid out-pointer; on success the caller owns the result.
        check(unsafe { sys::cblob_context_create(&mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::Internal, "cblob_context_create returned NULL"))?;
        Ok(Context { raw })
    }

    /// The raw handle, for calls through [`crate::sys`]. It stays owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::cblob_context {
        self.raw.as_ptr()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: self owns one hold on the handle and gives it up exactly once.
        unsafe { sys::cblob_context_destroy(self.raw.as_ptr()) }
    }
}
