// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Blob type with its view counters
// (memory.rs), its host views (slices whose borrows keep the memory) and set_cpu_data (a Vec
// handed to the library with a release callback).
use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::mem;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::slice;
use std::sync::Arc;

use crate::error::{check, Error, Result};
use crate::memory::{with_access, Access, Memory, ViewClaim};
use crate::{sys, Element, Part, Status};

/// Caffe's Blob: an N-d array (at most [`MAX_AXES`](crate::MAX_AXES) axes, C-contiguous) holding `data` and
/// `diff` (the gradient), each allocated on first access, zero-filled, and moved between host
/// and GPU only when an accessor needs it.
///
/// A `Blob` owns one hold on the library's handle and drops it in `Drop`. The dtype is chosen at
/// run time (a model file decides it); typed access checks it: [`Blob::data`] and friends take
/// the element type ([`f32`], [`f64`], [`i32`], [`u32`]) and fail with [`Status::DType`] when
/// it is not the blob's.
///
/// ```
/// use cblob::{Blob, Context, DType, Part};
///
/// let ctx = Context::new()?;
/// let mut blob = Blob::new(&ctx, DType::Float32, &[2, 3])?;
/// let (mut data, mut diff) = blob.data_and_diff_mut::<f32>()?;
/// data.copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// diff.fill(0.5);
/// drop((data, diff));
/// blob.update()?; // data -= diff
/// assert_eq!(&*blob.data::<f32>()?, &[0.5, 1.5, 2.5, 3.5, 4.5, 5.5]);
/// assert_eq!(blob.asum(Part::Data)?, 18.0);
/// # Ok::<(), cblob::Error>(())
/// ```
///
/// # Threads
///
/// `Send` but not `Sync`: a blob may move to another thread, but one blob is used by one thread
/// at a time (the header allows concurrent use of one handle only for pure getters, and
/// `&self` methods such as [`Blob::data`] allocate and move the memory's head). Blobs that share
/// memory may live on different threads: calls that touch the shared memory are serialised.
///
/// # Views and sharing
///
/// A view borrows its blob, so the borrow checker stops reshaping, replacing or dropping the
/// blob while the view lives. Blobs that share memory ([`Blob::share`]) are distinct objects the
/// borrow checker cannot relate, so the crate counts views per memory at run time, as `RefCell`
/// does: a mutable view, or a call that writes the memory, fails with [`Status::State`] while
/// another view of that memory is alive, through either blob.
pub struct Blob {
    pub(crate) raw: NonNull<sys::cblob_blob>,
    pub(crate) data: Arc<Memory>,
    pub(crate) diff: Arc<Memory>,
}

// SAFETY: a blob handle may be used from any thread (header, Threads: distinct handles may be used
// from different threads at once); memory it shares with other blobs is guarded by `Memory`, which
// is thread-safe. Not Sync: see the type's documentation.
unsafe impl Send for Blob {}

impl Blob {
    /// Runs a call that makes a new blob into `out` (an out-pointer the call writes only on
    /// success) and takes ownership of the result.
    pub(crate) fn created(call: impl FnOnce(*mut *mut sys::cblob_blob) -> sys::cblob_status) -> Result<Blob> {
        let mut raw = ptr::null_mut();
        check(call(&mut raw))?;
        // SAFETY: the call succeeded, so raw is a new handle whose hold this blob now owns.
        unsafe { Blob::from_raw(raw) }
    }

    /// Takes ownership of one hold on a raw handle (one made by a `cblob_blob_create*` call or
    /// added with `cblob_blob_retain`).
    ///
    /// # Safety
    /// `raw` must be a live blob handle whose hold the caller gives up, and no other `Blob`
    /// may own a hold on the same handle (two would let two threads use one handle at once).
    pub unsafe fn from_raw(raw: *mut sys::cblob_blob) -> Result<Blob> {
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::InvalidArgument, "a NULL blob handle"))?;
        Ok(Blob { raw, data: Memory::new(), diff: Memory::new() })
    }

    /// Gives up ownership: the caller must drop the returned hold with `cblob_blob_destroy`.
    pub fn into_raw(self) -> *mut sys::cblob_blob {
        let raw = self.raw.as_ptr();
        mem::forget(self);
        raw
    }

    /// The raw handle, for calls through [`crate::sys`]; it stays owned by `self`. Calls made
    /// through it bypass the view tracking described above: the caller keeps the rules.
    pub fn as_ptr(&self) -> *mut sys::cblob_blob {
        self.raw.as_ptr()
    }

    /// Runs a call that may replace the storage. The header says when it does (the capacity
    /// grows, or set_cpu_data sets it to exactly the count); fresh storage is shared with no
    /// other blob, so the blob then stops counting views with its former sharers.
    pub(crate) fn reshaping(&mut self, call: impl FnOnce(*mut sys::cblob_blob) -> sys::cblob_status) -> Result<()> {
        let capacity = self.capacity();
        check(call(self.raw.as_ptr()))?;
        if self.capacity() != capacity {
            self.data = Memory::new();
            self.diff = Memory::new();
        }
        Ok(())
    }

    // ---- memory ------------------------------------------------------------------------------

    /// Counts this blob's `part` as one memory with other holders of `memory` (an arena's).
    pub(crate) fn set_memory(&mut self, part: Part, memory: Arc<Memory>) {
        match part {
            Part::Data => self.data = memory,
            Part::Diff => self.diff = memory,
        }
    }

    pub(crate) fn memory(&self, part: Part) -> &Arc<Memory> {
        match part {
            Part::Data => &self.data,
            Part::Diff => &self.diff,
        }
    }

    pub(crate) fn expect_dtype<T: Element>(&self) -> Result<()> {
        let dtype = self.dtype()?;
        if dtype == T::DTYPE {
            return Ok(());
        }
        Err(Error::new(
            Status::DType,
            format!("the blob holds {dtype:?} elements, not {:?} ({})", T::DTYPE, std::any::type_name::<T>()),
        ))
    }

    /// A slice over `count` elements at `ptr` (NULL for a blob without elements).
    fn slice_parts<T: Element>(&self, ptr: *mut c_void) -> Result<(NonNull<T>, usize)> {
        let len = usize::try_from(self.count()).map_err(|_| Error::new(Status::Internal, "negative count"))?;
        Ok((typed_ptr::<T>(ptr, len)?, len))
    }

    fn host_ptr<T: Element>(&self, part: Part, access: Access) -> Result<(ViewClaim, NonNull<T>, usize)> {
        self.expect_dtype::<T>()?;
        let (claim, ptr) = ViewClaim::acquire(self.memory(part), access, || {
            let raw = self.raw.as_ptr();
            match access {
                Access::Read => {
                    let mut p: *const c_void = ptr::null();
                    // SAFETY: raw is live; this thread alone uses it; p is a valid out-pointer.
                    check(unsafe { sys::cblob_blob_cpu_ptr(raw, part.raw(), &mut p) }).map(|_| p.cast_mut())
                }
                Access::Write => {
                    let mut p: *mut c_void = ptr::null_mut();
                    // SAFETY: as above.
                    check(unsafe { sys::cblob_blob_mutable_cpu_ptr(raw, part.raw(), &mut p) }).map(|_| p)
                }
            }
        })?;
        let (ptr, len) = self.slice_parts::<T>(ptr)?;
        Ok((claim, ptr, len))
    }

    /// A read-only host view of data or diff (Caffe's `cpu_data` / `cpu_diff`): syncs from the
    /// GPU when the current copy is there. Fails with [`Status::DType`] when `T` is not the
    /// blob's element type, and with [`Status::State`] while a mutable view of this memory is
    /// alive through a blob sharing it.
    ///
    /// The view borrows the blob, so it cannot outlive it:
    ///
    /// ```compile_fail,E0597
    /// # let ctx = cblob::Context::new().unwrap();
    /// let view = {
    ///     let blob = cblob::Blob::new(&ctx, cblob::DType::Float32, &[4]).unwrap();
    ///     blob.data::<f32>().unwrap()
    /// }; // error: `blob` does not live long enough
    /// # drop(view);
    /// ```
    ///
    /// nor can the blob be reshaped while it lives:
    ///
    /// ```compile_fail,E0502
    /// # let ctx = cblob::Context::new().unwrap();
    /// let mut blob = cblob::Blob::new(&ctx, cblob::DType::Float32, &[4]).unwrap();
    /// let view = blob.data::<f32>().unwrap();
    /// blob.reshape(&[1000]).unwrap(); // error: cannot borrow `blob` as mutable
    /// # drop(view);
    /// ```
    pub fn view<T: Element>(&self, part: Part) -> Result<View<'_, T>> {
        let (claim, ptr, len) = self.host_ptr::<T>(part, Access::Read)?;
        Ok(View { ptr, len, _claim: claim, _blob: PhantomData })
    }

    /// A writable host view of data or diff (Caffe's `mutable_cpu_data` / `mutable_cpu_diff`):
    /// syncs like [`Blob::view`], then marks the host copy current. Fails with
    /// [`Status::State`] while any other view of this memory is alive through a blob sharing it.
    pub fn view_mut<T: Element>(&mut self, part: Part) -> Result<ViewMut<'_, T>> {
        let (claim, ptr, len) = self.host_ptr::<T>(part, Access::Write)?;
        Ok(ViewMut { ptr, len, _claim: claim, _blob: PhantomData })
    }

    /// `view(Part::Data)`.
    pub fn data<T: Element>(&self) -> Result<View<'_, T>> {
        self.view(Part::Data)
    }

    /// `view(Part::Diff)`.
    pub fn diff<T: Element>(&self) -> Result<View<'_, T>> {
        self.view(Part::Diff)
    }

    /// `view_mut(Part::Data)`.
    pub fn data_mut<T: Element>(&mut self) -> Result<ViewMut<'_, T>> {
        self.view_mut(Part::Data)
    }

    /// `view_mut(Part::Diff)`.
    pub fn diff_mut<T: Element>(&mut self) -> Result<ViewMut<'_, T>> {
        self.view_mut(Part::Diff)
    }

    /// Writable views of data and diff at once (for filling both before [`Blob::update`]).
    pub fn data_and_diff_mut<T: Element>(&mut self) -> Result<(ViewMut<'_, T>, ViewMut<'_, T>)> {
        let (data_claim, data, len) = self.host_ptr::<T>(Part::Data, Access::Write)?;
        let (diff_claim, diff, _) = self.host_ptr::<T>(Part::Diff, Access::Write)?;
        Ok((
            ViewMut { ptr: data, len, _claim: data_claim, _blob: PhantomData },
            ViewMut { ptr: diff, len, _claim: diff_claim, _blob: PhantomData },
        ))
    }

    /// Makes `values` the blob's host data without copying (Caffe's `set_cpu_data`); the
    /// library owns the vector from then on and drops it, from whichever thread lets go last,
    /// when the blob is destroyed or given another buffer. `values` must hold at least `count`
    /// elements of the blob's type. If the storage does not hold exactly `count` elements (after
    /// a shrinking reshape), data and diff first get fresh storage, as in Caffe (the diff's
    /// contents are dropped). Blobs sharing the data see the new buffer. On failure `values` is
    /// dropped.
    pub fn set_cpu_data<T: Element>(&mut self, mut values: Vec<T>) -> Result<()> {
        self.expect_dtype::<T>()?;
        let ptr = values.as_mut_ptr().cast::<c_void>();
        let size_bytes = values.len() * mem::size_of::<T>();
        let owner = Box::into_raw(Box::new(values)).cast::<c_void>();
        let data = Arc::clone(&self.data);
        let result = with_access(&[(&data, Access::Write)], || {
            self.reshaping(|raw| {
                // SAFETY: ptr and size_bytes describe the boxed vector's buffer, which stays put
                // until release_vec frees the box.
                unsafe { sys::cblob_blob_set_cpu_data(raw, ptr, size_bytes, Some(release_vec::<T>), owner) }
            })
        });
        if result.is_err() {
            // SAFETY: on failure the library never calls release, so the box is still ours.
            drop(unsafe { Box::from_raw(owner.cast::<Vec<T>>()) });
        }
        result
    }

    /// Makes this blob use `other`'s data or diff memory (Caffe's `ShareData` / `ShareDiff`):
    /// both then see one memory, kept alive until its last holder lets go. Counts must be equal
    /// (shapes may differ) and dtypes the same. A later reshape that grows this blob gives it
    /// fresh storage and ends the sharing.
    pub fn share(&mut self, other: &Blob, part: Part) -> Result<()> {
        // SAFETY: both handles are live; this changes only which storage self holds (other's is
        // retained atomically), and self has no views (&mut).
        check(unsafe { sys::cblob_blob_share(self.raw.as_ptr(), other.raw.as_ptr(), part.raw()) })?;
        match part {
            Part::Data => self.data = Arc::clone(&other.data),
            Part::Diff => self.diff = Arc::clone(&other.diff),
        }
        Ok(())
    }

    /// `share(other, Part::Data)`.
    pub fn share_data(&mut self, other: &Blob) -> Result<()> {
        self.share(other, Part::Data)
    }

    /// `share(other, Part::Diff)`.
    pub fn share_diff(&mut self, other: &Blob) -> Result<()> {
        self.share(other, Part::Diff)
    }
}

/// The start of a slice of `len` elements at `ptr`, which the library gives as NULL for no
/// elements; checked for alignment.
pub(crate) fn typed_ptr<T>(ptr: *mut c_void, len: usize) -> Result<NonNull<T>> {
    let ptr = match NonNull::new(ptr.cast::<T>()) {
        Some(p) => p,
        None if len == 0 => return Ok(NonNull::dangling()),
        None => return Err(Error::new(Status::Internal, "NULL host pointer for a range with elements")),
    };
    if !ptr.as_ptr().is_aligned() {
        return Err(Error::new(Status::State, "the host buffer is not aligned for the element type"));
    }
    Ok(ptr)
}

/// The release callback of buffers given with set_cpu_data: frees the boxed vector.
unsafe extern "C" fn release_vec<T>(_ptr: *mut c_void, owner: *mut c_void) {
    drop(Box::from_raw(owner.cast::<Vec<T>>()));
}

impl Drop for Blob {
    fn drop(&mut self) {
        // SAFETY: self owns one hold on the handle and gives it up exactly once.
        unsafe { sys::cblob_blob_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blob")
            .field("dtype", &self.dtype().ok())
            .field("shape", &self.shape_string())
            .finish()
    }
}

/// A read-only view of a blob's host memory; derefs to `[T]`. See [`Blob::view`].
pub struct View<'a, T> {
    ptr: NonNull<T>,
    len: usize,
    _claim: ViewClaim,
    _blob: PhantomData<&'a [T]>,
}

/// A writable view of a blob's host memory; derefs to `[T]` mutably. See [`Blob::view_mut`].
pub struct ViewMut<'a, T> {
    ptr: NonNull<T>,
    len: usize,
    _claim: ViewClaim,
    _blob: PhantomData<&'a mut [T]>,
}

// SAFETY: views are slices over memory no one else writes while they live (the claim and the
// blob's borrow see to that), so they are as Send and Sync as &[T] and &mut [T].
unsafe impl<T: Sync> Send for View<'_, T> {}
unsafe impl<T: Sync> Sync for View<'_, T> {}
unsafe impl<T: Send> Send for ViewMut<'_, T> {}
unsafe impl<T: Sync> Sync for ViewMut<'_, T> {}

impl<T> Deref for View<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr points to len initialised elements (zero-filled on allocation) that stay
        // valid and unwritten while the view and its claim live.
        unsafe { slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Deref for ViewMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: as for View; the claim makes this the only view of the memory.
        unsafe { slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for ViewMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, and &mut self makes this the only live slice.
        unsafe { slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: fmt::Debug> fmt::Debug for View<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for ViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
