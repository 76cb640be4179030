// SPDX-License-Identifier: BSD-2-Clause
//! NeoML's typed copies (`CopyFrom(T*)`, `CopyTo`), by hand: they are generic over the element
//! type and check it against the blob's before the call. NeoML's other `CDnnBlob` operations
//! (the named 7-axis layout, clones and conversions, transposes, merges and splits, fills and
//! adds) are one library call each, generated (generated.rs); windows are [`crate::Window`],
//! mapped ranges [`crate::Mapping`].
//!
//! Each operation runs where the memory it works on is current (host or device); see the
//! header's "NeoML blob operations" section for the rules, the conversions and the overlap
//! checks.
use crate::error::{check, Result};
use crate::memory::{with_access, Access};
use crate::{sys, Blob, Element, Part};

impl Blob {
    /// Copies `values` into data or diff (NeoML's `CopyFrom(T*)`); `T` must be the blob's
    /// element type and `values` must hold exactly `count` elements.
    pub fn copy_in<T: Element>(&mut self, part: Part, values: &[T]) -> Result<()> {
        self.write(part, |raw| unsafe {
            sys::cblob_blob_copy_in(raw, part.raw(), T::DTYPE.raw(), values.as_ptr().cast(), values.len() as i64)
        })
    }

    /// Copies data or diff into `out` (NeoML's `CopyTo`), which must hold exactly `count`
    /// elements of the blob's type.
    pub fn copy_out<T: Element>(&self, part: Part, out: &mut [T]) -> Result<()> {
        self.read(part, |raw| unsafe { sys::cblob_blob_copy_out(raw, part.raw(), T::DTYPE.raw(), out.as_mut_ptr().cast(), out.len() as i64) })
    }

    /// Data or diff copied into a new vector.
    pub fn to_vec<T: Element>(&self, part: Part) -> Result<Vec<T>> {
        self.expect_dtype::<T>()?;
        let length = usize::try_from(self.count()).unwrap_or(0);
        let mut values = Vec::<T>::with_capacity(length);
        let ptr = values.as_mut_ptr();
        // SAFETY: ptr has room for length elements; the library writes all of them or fails.
        self.read(part, |raw| unsafe { sys::cblob_blob_copy_out(raw, part.raw(), T::DTYPE.raw(), ptr.cast(), length as i64) })?;
        // SAFETY: copy_out succeeded, so all length elements are written.
        unsafe { values.set_len(length) };
        Ok(values)
    }

    // SAFETY of the closures above: each C call gets a live handle, a valid pointer and its
    // length, and runs with the memory it touches claimed here.

    /// Runs a call that writes one part of this blob.
    fn write(&mut self, part: Part, call: impl FnOnce(*mut sys::cblob_blob) -> sys::cblob_status) -> Result<()> {
        with_access(&[(self.memory(part), Access::Write)], || check(call(self.as_ptr())))
    }

    /// Runs a call that reads one part of this blob.
    fn read(&self, part: Part, call: impl FnOnce(*mut sys::cblob_blob) -> sys::cblob_status) -> Result<()> {
        with_access(&[(self.memory(part), Access::Read)], || check(call(self.as_ptr())))
    }
}
