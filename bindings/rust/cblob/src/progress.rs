// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): Context::set_progress, whose callback
// needs a trampoline the library calls (cblob_progress_fn) and a closure that outlives it.
//! Progress and cancellation of the calls that read or write files.
//!
//! The library calls one `extern "C"` trampoline; its `user_data` is a key into a process-wide
//! table of the closures, not a pointer to one. A context handle outlives its `Context` (blobs
//! keep it alive inside the library) and a call in progress keeps the callback it started with,
//! so a pointer to a closure the `Context` owned could be called after the closure was dropped.
//! With the key, a call that outlives its closure finds no entry and goes on.
use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::context::Context;
use crate::error::{check, Result};
use crate::sys;

/// The closure `Context::set_progress` keeps; shared so that the trampoline can call it without
/// holding the table's lock (two threads may save through one context at once).
type Callback = Arc<Mutex<dyn FnMut(i64, Option<i64>) -> bool + Send>>;

static CALLBACKS: Mutex<BTreeMap<usize, Callback>> = Mutex::new(BTreeMap::new());
static NEXT_KEY: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// A panic the callback raised on this thread, resumed when the stopped call returns
    /// (error.rs reads it for Status::Cancelled): the library calls the callback on the thread
    /// that made the call, so the panic and the failure meet here.
    static PENDING_PANIC: RefCell<Option<Box<dyn Any + Send>>> = const { RefCell::new(None) };
}

fn lock_table() -> std::sync::MutexGuard<'static, BTreeMap<usize, Callback>> {
    // A panic never happens while the table is held; a poisoned lock still holds a sound map.
    CALLBACKS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// cblob_progress_fn: 0 lets the call go on, 1 stops it. A panic must not unwind into C: it is
/// caught, stops the call, and is resumed by the binding once the call has failed.
extern "C" fn trampoline(user_data: *mut c_void, done: i64, total: i64) -> i32 {
    let key = user_data as usize;
    let callback = match lock_table().get(&key) {
        Some(callback) => Arc::clone(callback),
        None => return 0, // the closure was replaced or its Context dropped: the call goes on
    };
    let total = if total < 0 { None } else { Some(total) };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut f = callback.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        (f)(done, total)
    }));
    match outcome {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(payload) => {
            PENDING_PANIC.with(|pending| *pending.borrow_mut() = Some(payload));
            1
        }
    }
}

/// Resumes the panic a progress callback raised on this thread, if any (the failed call's
/// status is CBLOB_ERR_CANCELLED: the trampoline stopped it).
pub(crate) fn resume_callback_panic() {
    if let Some(payload) = PENDING_PANIC.with(|pending| pending.borrow_mut().take()) {
        panic::resume_unwind(payload);
    }
}

/// The key of a context's closure in the table (0: none), forgotten when it is replaced or the
/// Context dropped.
#[derive(Debug, Default)]
pub(crate) struct ProgressKey(usize);

impl ProgressKey {
    fn forget(&mut self) {
        if self.0 != 0 {
            lock_table().remove(&self.0);
            self.0 = 0;
        }
    }
}

impl Drop for ProgressKey {
    fn drop(&mut self) {
        self.forget();
    }
}

impl Context {
    /// Sets the function told how far the context's calls that read or write files are, and
    /// asked whether they may go on (`None`: none, the default). Those are the saves and loads
    /// of blobs, blob vectors, models and files to and from paths (`Blob::save_npy`,
    /// `Net::open_file`, `File::open`, ...), through the context of the handle they read
    /// into or write from.
    ///
    /// `progress(done, total)`: `done` is the bytes read or written so far, `total` the bytes
    /// the call will read or write in all (`None` while it cannot know, as for a pipe read to
    /// its end). It is called first with `done` 0, then each time at least a MiB more is done,
    /// and last with `done == total`: for a write just before the output takes its place.
    /// Returning `true` lets the call go on; `false` stops it, and it fails with
    /// [`Status::Cancelled`](crate::Status::Cancelled), changing nothing (a file being written
    /// is not put in place, an existing file keeps its bytes).
    ///
    /// It runs on the thread that made the call, inside the call: it must not use the blobs,
    /// models or files the call uses. A panic in it stops the call, and is resumed on that
    /// thread once the call has failed (it never unwinds through the library). Two threads
    /// saving through one context call it one at a time. A call already in progress on another
    /// thread keeps the function it started with until this one is replaced or the `Context`
    /// dropped; after that, it goes on without one.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("cblob-doc-progress-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let mut ctx = cblob::Context::new()?;
    /// let blob = cblob::Blob::new(&ctx, cblob::DType::Float32, &[2, 3])?;
    /// let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    /// let seen = calls.clone();
    /// ctx.set_progress(Some(move |_done: i64, _total: Option<i64>| {
    ///     seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ///     true
    /// }))?;
    /// blob.save_npy(dir.join("b.npy"), cblob::Part::Data)?;
    /// assert!(calls.load(std::sync::atomic::Ordering::Relaxed) > 0);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), cblob::Error>(())
    /// ```
    pub fn set_progress<F>(&mut self, progress: Option<F>) -> Result<()>
    where
        F: FnMut(i64, Option<i64>) -> bool + Send + 'static,
    {
        let key = match progress {
            Some(f) => {
                let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
                let callback: Callback = Arc::new(Mutex::new(f));
                lock_table().insert(key, callback);
                key
            }
            None => 0,
        };
        let (function, user_data): (sys::cblob_progress_fn, *mut c_void) =
            if key == 0 { (None, std::ptr::null_mut()) } else { (Some(trampoline), key as *mut c_void) };
        // SAFETY: the context is live; the trampoline stays valid for the process, and its
        // user_data is a key, never dereferenced.
        let status = unsafe { sys::cblob_context_set_progress(self.as_ptr(), function, user_data) };
        if let Err(error) = check(status) {
            if key != 0 {
                lock_table().remove(&key);
            }
            return Err(error);
        }
        let mut previous = std::mem::replace(&mut self.progress, ProgressKey(key));
        previous.forget();
        Ok(())
    }
}
