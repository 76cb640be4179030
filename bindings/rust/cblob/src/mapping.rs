// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): mapped ranges as scoped guards that borrow
// their blob and unmap on drop.
//! Mapped ranges of a blob (NeoML's `GetBuffer` / `ReleaseBuffer`) as scoped guards.
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, Range};
use std::ptr::{self, NonNull};
use std::slice;

use crate::blob::typed_ptr;
use crate::error::{check, Error, Result};
use crate::memory::{Access as Claim, ViewClaim};
use crate::{sys, Access, Blob, Element, Part, Status};

/// An open read-only mapping of a range of a blob's data or diff ([`Blob::map`]): a slice of
/// host memory, unmapped when the guard is dropped (or by [`Mapping::unmap`], which reports
/// errors). [`MappingMut`] is the writable kind.
///
/// Where the part's current copy is on the device, the range is staged through host memory:
/// copied from the device when mapped for reading, and back when a writable mapping ends.
/// Otherwise the slice is the blob's host memory itself.
///
/// A mapping borrows its blob mutably, so a blob has at most one mapping through this crate
/// at a time (the library demands that a blob's mappings end last in, first out; one at a time
/// cannot break that), and nothing can reshape or move the blob while it is mapped. Like a
/// view, a mapping claims its memory: through a blob sharing it, a writable mapping fails with
/// [`Status::State`] while a view is alive, and views fail while a writable mapping is.
///
/// ```
/// use cblob::{Blob, Context, DType, Part};
///
/// let ctx = Context::new()?;
/// let mut blob = Blob::new(&ctx, DType::Int32, &[6])?;
/// {
///     let mut range = blob.map_mut::<i32>(Part::Data, 2..5)?;
///     range.copy_from_slice(&[7, 8, 9]);
/// } // unmapped here
/// assert_eq!(&*blob.map::<i32>(Part::Data, 1..4)?, &[0, 7, 8]);
/// # Ok::<(), cblob::Error>(())
/// ```
pub struct Mapping<'b, T> {
    inner: Mapped<'b, T>,
}

/// An open writable mapping of a range of a blob's data or diff ([`Blob::map_mut`],
/// [`Blob::map_write`]); see [`Mapping`]. What is written reaches the blob when it ends.
pub struct MappingMut<'b, T> {
    inner: Mapped<'b, T>,
}

/// What both kinds of mapping hold.
struct Mapped<'b, T> {
    buffer: NonNull<sys::cblob_buffer>,
    ptr: NonNull<T>,
    len: usize,
    open: bool,
    _claim: ViewClaim,
    _blob: PhantomData<&'b mut Blob>,
}

// SAFETY: the guard is the only way to the mapped memory and the mapping's handle while it
// lives (the blob is borrowed mutably); like &mut [T] it may move to another thread with the
// blob's borrow, and be shared as &[T] is.
unsafe impl<T: Send> Send for Mapped<'_, T> {}
unsafe impl<T: Sync> Sync for Mapped<'_, T> {}

impl Blob {
    /// Maps `range` (in elements) of data or diff for reading. `T` must be the blob's element
    /// type; the range must lie within the count ([`Status::OutOfRange`] otherwise).
    pub fn map<T: Element>(&mut self, part: Part, range: Range<i64>) -> Result<Mapping<'_, T>> {
        self.map_range(part, range, Access::Read).map(|inner| Mapping { inner })
    }

    /// Maps `range` of data or diff for reading and writing; what is written reaches the blob
    /// (its current copy, on the host or the device) when the mapping ends.
    pub fn map_mut<T: Element>(&mut self, part: Part, range: Range<i64>) -> Result<MappingMut<'_, T>> {
        self.map_range(part, range, Access::ReadWrite).map(|inner| MappingMut { inner })
    }

    /// Maps `range` of data or diff for writing every element: a range current on the device
    /// is not copied to the host first, so the slice starts with unspecified values (zeros in
    /// this version of the library, never uninitialised memory).
    pub fn map_write<T: Element>(&mut self, part: Part, range: Range<i64>) -> Result<MappingMut<'_, T>> {
        self.map_range(part, range, Access::Write).map(|inner| MappingMut { inner })
    }

    fn map_range<T: Element>(&mut self, part: Part, range: Range<i64>, access: Access) -> Result<Mapped<'_, T>> {
        self.expect_dtype::<T>()?;
        let count = range.end.checked_sub(range.start).filter(|&c| c >= 0).ok_or_else(|| {
            Error::new(Status::OutOfRange, format!("the range {}..{} is not a range of elements", range.start, range.end))
        })?;
        let len = usize::try_from(count).map_err(|_| Error::new(Status::Overflow, format!("{count} elements do not fit in a slice")))?;
        let claim = if access == Access::Read { Claim::Read } else { Claim::Write };
        let raw = self.as_ptr();
        let (claim, (buffer, ptr)) = ViewClaim::acquire(self.memory(part), claim, || {
            let (mut buffer, mut ptr) = (ptr::null_mut(), ptr::null_mut());
            // SAFETY: a live handle used by this thread alone (&mut); valid out-pointers.
            check(unsafe { sys::cblob_blob_map(raw, part.raw(), range.start, count, access.raw(), &mut buffer, &mut ptr) })?;
            Ok((buffer, ptr))
        })?;
        let buffer = NonNull::new(buffer).ok_or_else(|| Error::new(Status::Internal, "cblob_blob_map gave a NULL mapping"))?;
        let mut mapping = Mapped { buffer, ptr: NonNull::dangling(), len, open: true, _claim: claim, _blob: PhantomData };
        // On an error here the guard's Drop unmaps.
        mapping.ptr = typed_ptr::<T>(ptr, len)?;
        Ok(mapping)
    }
}

impl<T> Mapping<'_, T> {
    /// Ends the mapping and reports what the library says (see [`MappingMut::unmap`]).
    pub fn unmap(mut self) -> Result<()> {
        self.inner.end()
    }
}

impl<T> MappingMut<'_, T> {
    /// Ends the mapping and reports what the library says: a range staged from the device is
    /// copied back here, and that copy can fail ([`Status::Device`]). Dropping the guard does
    /// the same, ignoring the error after trying once more.
    ///
    /// If the copy back fails twice, the mapping stays open in the library: the blob keeps its
    /// memory and refuses to change shape or take a buffer, and is freed only with the process.
    pub fn unmap(mut self) -> Result<()> {
        self.inner.end()
    }
}

impl<T> Mapped<'_, T> {
    fn end(&mut self) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        // SAFETY: a mapping this guard opened and has not ended; the slice's borrows ended with
        // &mut self.
        check(unsafe { sys::cblob_buffer_unmap(self.buffer.as_ptr()) })?;
        self.open = false;
        Ok(())
    }

    fn slice(&self) -> &[T] {
        // SAFETY: ptr points to len initialised elements (the blob's memory, or a zero-filled
        // staging buffer) that live until the mapping ends, which needs &mut self or self.
        unsafe { slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn slice_mut(&mut self) -> &mut [T] {
        // SAFETY: as in slice; a writable mapping holds a write claim, and &mut self makes this
        // the only slice.
        unsafe { slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for Mapped<'_, T> {
    fn drop(&mut self) {
        // A failed copy back (a device error) cannot be reported from Drop: see unmap.
        let _ = self.end();
    }
}

impl<T> Deref for Mapping<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.inner.slice()
    }
}

impl<T> Deref for MappingMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.inner.slice()
    }
}

impl<T> DerefMut for MappingMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.inner.slice_mut()
    }
}

impl<T: fmt::Debug> fmt::Debug for Mapping<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for MappingMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
