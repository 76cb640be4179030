// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Context type and its constructor; its
// one-call methods and lifetime are generated.
use std::ptr::NonNull;

use crate::error::Result;
use crate::sys;

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
    pub(crate) raw: NonNull<sys::cblob_context>,
    /// The progress callback's entry in progress.rs's table, forgotten when this is dropped.
    pub(crate) progress: crate::progress::ProgressKey,
}

// SAFETY: a context handle may be used from any thread (header, Threads: distinct handles may be
// used from different threads at once); it is not Sync (see the type's documentation).
unsafe impl Send for Context {}

impl Context {
    /// A new context in CPU mode.
    pub fn new() -> Result<Context> {
        // SAFETY: the out-pointer is valid; on success the context owns the result.
        Context::created(|out| unsafe { sys::cblob_context_create(out) })
    }

}

