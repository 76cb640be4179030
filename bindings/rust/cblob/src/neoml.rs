// SPDX-License-Identifier: BSD-2-Clause
//! NeoML's `CDnnBlob` operations on [`Blob`]: the named 7-axis layout, typed copies, clones and
//! conversions, transposes, merges and splits, fills and adds. Windows are [`crate::Window`],
//! mapped ranges [`crate::Mapping`].
//!
//! Each operation runs where the memory it works on is current (host or device); see the
//! header's "NeoML blob operations" section for the rules, the conversions and the overlap
//! checks.
use std::sync::Arc;

use crate::blob::axes;
use crate::error::{check, infallible, Result};
use crate::memory::{with_access, Access, Memory};
use crate::proto::raw_handles;
use crate::{sys, Blob, Context, DType, Dim, Element, Part};

impl Blob {
    /// A 7-axis NeoML blob from up to 7 dimensions, left-aligned as NeoML's `CreateTensor`:
    /// `dims[i]` becomes axis `i` (BatchLength first) and the other axes are 1.
    pub fn new_tensor(context: &Context, dtype: DType, dims: &[i64]) -> Result<Blob> {
        // SAFETY: dims holds axes(dims) values (the library reads none when there are over 7).
        Blob::created(|out| unsafe { sys::cblob_blob_create_tensor(context.as_ptr(), dtype.raw(), axes(dims), dims.as_ptr(), out) })
    }

    /// NeoML's vector blob `(size, 1, 1, 1, 1, 1, 1)`: the size is the BatchLength.
    pub fn new_vector(context: &Context, dtype: DType, size: i64) -> Result<Blob> {
        // SAFETY (all creators): plain values and a valid out-pointer.
        Blob::created(|out| unsafe { sys::cblob_blob_create_vector(context.as_ptr(), dtype.raw(), size, out) })
    }

    /// NeoML's matrix blob `(height, width, 1, 1, 1, 1, 1)`.
    pub fn new_matrix(context: &Context, dtype: DType, height: i64, width: i64) -> Result<Blob> {
        Blob::created(|out| unsafe { sys::cblob_blob_create_matrix(context.as_ptr(), dtype.raw(), height, width, out) })
    }

    /// `(batch_length, batch_width, 1, 1, 1, 1, channels)`, NeoML's `CreateDataBlob`.
    pub fn new_data(context: &Context, dtype: DType, batch_length: i64, batch_width: i64, channels: i64) -> Result<Blob> {
        Blob::created(|out| unsafe { sys::cblob_blob_create_data(context.as_ptr(), dtype.raw(), batch_length, batch_width, channels, out) })
    }

    /// `(batch_length, batch_width, list_size, 1, 1, 1, channels)`, NeoML's `CreateListBlob`.
    pub fn new_list(context: &Context, dtype: DType, batch_length: i64, batch_width: i64, list_size: i64, channels: i64) -> Result<Blob> {
        Blob::created(|out| unsafe { sys::cblob_blob_create_list(context.as_ptr(), dtype.raw(), batch_length, batch_width, list_size, channels, out) })
    }

    /// `(batch_length, batch_width, 1, height, width, 1, channels)`, NeoML's `Create2DImageBlob`.
    pub fn new_image2d(context: &Context, dtype: DType, batch_length: i64, batch_width: i64, height: i64, width: i64, channels: i64) -> Result<Blob> {
        Blob::created(|out| unsafe {
            sys::cblob_blob_create_image2d(context.as_ptr(), dtype.raw(), batch_length, batch_width, height, width, channels, out)
        })
    }

    /// `(batch_length, batch_width, 1, height, width, depth, channels)`, NeoML's `Create3DImageBlob`.
    #[allow(clippy::too_many_arguments)]
    pub fn new_image3d(
        context: &Context,
        dtype: DType,
        batch_length: i64,
        batch_width: i64,
        height: i64,
        width: i64,
        depth: i64,
        channels: i64,
    ) -> Result<Blob> {
        Blob::created(|out| unsafe {
            sys::cblob_blob_create_image3d(context.as_ptr(), dtype.raw(), batch_length, batch_width, height, width, depth, channels, out)
        })
    }

    /// A new blob with this one's shape and context and the given dtype (NeoML's
    /// `CreateBlob(type, pattern)`), zero-filled on first access; nothing is copied (see
    /// [`Blob::clone_as`] for that).
    pub fn new_like(&self, dtype: DType) -> Result<Blob> {
        // SAFETY: reads only the shape of a live handle.
        Blob::created(|out| unsafe { sys::cblob_blob_create_like(self.as_ptr(), dtype.raw(), out) })
    }

    // ---- the named layout ------------------------------------------------------------------

    /// The size of a named axis; needs exactly 7 axes ([`crate::Status::Shape`] otherwise).
    pub fn dim(&self, dim: Dim) -> Result<i64> {
        let mut size = 0;
        // SAFETY (all getters below): pure getters on a live handle with valid out-pointers.
        check(unsafe { sys::cblob_blob_dim(self.as_ptr(), dim.raw(), &mut size) })?;
        Ok(size)
    }

    /// BatchLength * BatchWidth * ListSize of a 7-axis blob.
    pub fn object_count(&self) -> Result<i64> {
        let mut value = 0;
        check(unsafe { sys::cblob_blob_object_count(self.as_ptr(), &mut value) })?;
        Ok(value)
    }

    /// Height * Width * Depth * Channels of a 7-axis blob.
    pub fn object_size(&self) -> Result<i64> {
        let mut value = 0;
        check(unsafe { sys::cblob_blob_object_size(self.as_ptr(), &mut value) })?;
        Ok(value)
    }

    /// Height * Width * Depth of a 7-axis blob.
    pub fn geometrical_size(&self) -> Result<i64> {
        let mut value = 0;
        check(unsafe { sys::cblob_blob_geometrical_size(self.as_ptr(), &mut value) })?;
        Ok(value)
    }

    /// Whether both blobs have the same axes and dimensions (dtypes are not compared).
    pub fn equal_shape(&self, other: &Blob) -> bool {
        let mut equal = 0;
        infallible(unsafe { sys::cblob_blob_equal_shape(self.as_ptr(), other.as_ptr(), &mut equal) });
        equal != 0
    }

    /// Whether both blobs have the same dimension on each listed axis (each must exist in both; a
    /// negative axis counts from each blob's end).
    pub fn equal_dims(&self, other: &Blob, axes_to_compare: &[i32]) -> Result<bool> {
        let mut equal = 0;
        check(unsafe { sys::cblob_blob_equal_dims(self.as_ptr(), other.as_ptr(), axes(axes_to_compare), axes_to_compare.as_ptr(), &mut equal) })?;
        Ok(equal != 0)
    }

    /// Gives the blob another shape with the same count (NeoML's `ReinterpretDimensions`):
    /// memory and contents stay. Works on windows.
    pub fn reinterpret(&mut self, shape: &[i64]) -> Result<()> {
        // SAFETY: a live handle used by this thread alone; shape holds axes(shape) values.
        check(unsafe { sys::cblob_blob_reinterpret(self.as_ptr(), axes(shape), shape.as_ptr()) })
    }

    // ---- typed copies, clones and conversions ------------------------------------------------

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

    /// Copies `source`'s data or diff into this blob, converting to its dtype (NeoML's
    /// `CopyFrom(blob)`); the shapes must be equal.
    pub fn convert_from(&mut self, source: &Blob, part: Part) -> Result<()> {
        self.write_from(part, &[source], |raw| unsafe { sys::cblob_blob_convert_from(raw, source.as_ptr(), part.raw()) })
    }

    /// `convert_from` with NeoML's float-to-integer rule: the fraction is truncated toward zero
    /// (NeoML's `VectorConvert`), then saturated; NaN gives 0. Other pairs convert as
    /// `convert_from` does. Since ABI 1.1.
    pub fn convert_from_truncating(&mut self, source: &Blob, part: Part) -> Result<()> {
        self.write_from(part, &[source], |raw| unsafe {
            sys::cblob_blob_convert_from_truncating(raw, source.as_ptr(), part.raw())
        })
    }

    /// A new, independent blob with this one's dtype, shape, data and diff (NeoML's `GetCopy`).
    pub fn deep_copy(&self) -> Result<Blob> {
        self.derive(|raw, out| unsafe { sys::cblob_blob_deep_copy(raw, out) })
    }

    /// A new, independent blob of `dtype` with this one's shape, data and diff converted.
    pub fn clone_as(&self, dtype: DType) -> Result<Blob> {
        self.derive(|raw, out| unsafe { sys::cblob_blob_clone(raw, dtype.raw(), out) })
    }

    /// A new blob with axes `axis1` and `axis2` swapped, in shape, data and diff (NeoML's
    /// `GetTransposed`); a negative axis counts from the end.
    pub fn transposed(&self, axis1: i32, axis2: i32) -> Result<Blob> {
        self.derive(|raw, out| unsafe { sys::cblob_blob_transposed(raw, axis1, axis2, out) })
    }

    /// Writes `source`'s data or diff with its axes `axis1` and `axis2` swapped into this blob
    /// (NeoML's `TransposeFrom`); this blob's shape must be source's with the two swapped.
    pub fn transpose_from(&mut self, source: &Blob, part: Part, axis1: i32, axis2: i32) -> Result<()> {
        self.write_from(part, &[source], |raw| unsafe { sys::cblob_blob_transpose_from(raw, source.as_ptr(), part.raw(), axis1, axis2) })
    }

    // ---- merge and split -----------------------------------------------------------------

    /// Writes the concatenation of the inputs along `axis` into this blob (NeoML's
    /// `MergeByDim`). Every dimension is checked; inputs must not share memory with this blob.
    pub fn merge(&mut self, part: Part, axis: i32, inputs: &[&Blob]) -> Result<()> {
        let handles = raw_handles(inputs);
        self.write_from(part, inputs, |raw| unsafe { sys::cblob_blob_merge(raw, part.raw(), axis, count32(&handles), handles.as_ptr()) })
    }

    /// Cuts this blob along `axis` into the outputs, in order (NeoML's `SplitByDim`).
    pub fn split(&self, part: Part, axis: i32, outputs: &mut [&mut Blob]) -> Result<()> {
        self.split_into(part, outputs, |raw, handles| unsafe { sys::cblob_blob_split(raw, part.raw(), axis, count32(handles), handles.as_ptr()) })
    }

    /// Joins whole objects of 7-axis blobs (NeoML's `MergeByObject`).
    pub fn merge_objects(&mut self, part: Part, inputs: &[&Blob]) -> Result<()> {
        let handles = raw_handles(inputs);
        self.write_from(part, inputs, |raw| unsafe { sys::cblob_blob_merge_objects(raw, part.raw(), count32(&handles), handles.as_ptr()) })
    }

    /// Cuts each object of this 7-axis blob into the outputs' objects (NeoML's `SplitByObject`).
    pub fn split_objects(&self, part: Part, outputs: &mut [&mut Blob]) -> Result<()> {
        self.split_into(part, outputs, |raw, handles| unsafe { sys::cblob_blob_split_objects(raw, part.raw(), count32(handles), handles.as_ptr()) })
    }

    // ---- fills and adds -------------------------------------------------------------------

    /// Sets every element of data or diff to `value` (NeoML's `Fill`). For an integer blob the
    /// value must be an integer ([`crate::Status::InvalidArgument`] otherwise) in the dtype's
    /// range ([`crate::Status::Overflow`] otherwise).
    pub fn fill(&mut self, part: Part, value: f64) -> Result<()> {
        self.write(part, |raw| unsafe { sys::cblob_blob_fill(raw, part.raw(), value) })
    }

    /// Sets one object of a 7-axis blob to `value` (NeoML's `FillObject`).
    pub fn fill_object(&mut self, part: Part, object: i64, value: f64) -> Result<()> {
        self.write(part, |raw| unsafe { sys::cblob_blob_fill_object(raw, part.raw(), object, value) })
    }

    /// Sets data or diff to zero (NeoML's `Clear`).
    pub fn clear(&mut self, part: Part) -> Result<()> {
        self.write(part, |raw| unsafe { sys::cblob_blob_clear(raw, part.raw()) })
    }

    /// Sets one object of a 7-axis blob to zero (NeoML's `ClearObject`).
    pub fn clear_object(&mut self, part: Part, object: i64) -> Result<()> {
        self.write(part, |raw| unsafe { sys::cblob_blob_clear_object(raw, part.raw(), object) })
    }

    /// Adds `source`'s data or diff to this blob's, element by element (NeoML's `Add`); dtypes
    /// and shapes must be equal. Integers wrap.
    pub fn add(&mut self, source: &Blob, part: Part) -> Result<()> {
        self.write_from(part, &[source], |raw| unsafe { sys::cblob_blob_add(raw, source.as_ptr(), part.raw()) })
    }

    // ---- how calls claim memory ---------------------------------------------------------------
    // SAFETY of the closures above: each C call gets live handles (borrowed for the call),
    // valid pointers and lengths, and runs with the memories it touches claimed here.

    /// Runs a call that writes one part of this blob.
    fn write(&mut self, part: Part, call: impl FnOnce(*mut sys::cblob_blob) -> sys::cblob_status) -> Result<()> {
        with_access(&[(self.memory(part), Access::Write)], || check(call(self.as_ptr())))
    }

    /// Runs a call that reads one part of this blob.
    fn read(&self, part: Part, call: impl FnOnce(*mut sys::cblob_blob) -> sys::cblob_status) -> Result<()> {
        with_access(&[(self.memory(part), Access::Read)], || check(call(self.as_ptr())))
    }

    /// Runs a call that writes one part of this blob from the same part of `sources`.
    fn write_from(&mut self, part: Part, sources: &[&Blob], call: impl FnOnce(*mut sys::cblob_blob) -> sys::cblob_status) -> Result<()> {
        let mut uses: Vec<(&Arc<Memory>, Access)> = vec![(self.memory(part), Access::Write)];
        uses.extend(sources.iter().map(|s| (s.memory(part), Access::Read)));
        with_access(&uses, || check(call(self.as_ptr())))
    }

    /// Runs a split: reads one part of this blob, writes that part of the outputs.
    fn split_into(
        &self,
        part: Part,
        outputs: &mut [&mut Blob],
        call: impl FnOnce(*mut sys::cblob_blob, &[*mut sys::cblob_blob]) -> sys::cblob_status,
    ) -> Result<()> {
        let handles: Vec<*mut sys::cblob_blob> = outputs.iter().map(|b| b.as_ptr()).collect();
        let mut uses: Vec<(&Arc<Memory>, Access)> = vec![(self.memory(part), Access::Read)];
        uses.extend(outputs.iter().map(|b| (b.memory(part), Access::Write)));
        with_access(&uses, || check(call(self.as_ptr(), &handles)))
    }

    /// Runs a call that makes a new blob from both parts of this one.
    fn derive(&self, call: impl FnOnce(*mut sys::cblob_blob, *mut *mut sys::cblob_blob) -> sys::cblob_status) -> Result<Blob> {
        with_access(&[(&self.data, Access::Read), (&self.diff, Access::Read)], || Blob::created(|out| call(self.as_ptr(), out)))
    }
}

/// A list length as the C ABI's int32 count, saturated (the library checks the count).
fn count32<T>(items: &[T]) -> i32 {
    i32::try_from(items.len()).unwrap_or(i32::MAX)
}
