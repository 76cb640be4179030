// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): DLPack's owned tensors, which call their
// deleter once unless handed over (a judgement of ownership, with view tracking), their host
// slices and ImportError. DLPack's constants and struct mirrors, the tensors' field getters and
// the blobs' exports and imports are generated (dlpack_generated.rs, codegen/safe_dlpack.py).
//! DLPack: a blob's data or diff handed to NumPy, PyTorch, CuPy, JAX or any other DLPack 1.x
//! consumer without a copy, and a DLPack tensor taken in as a blob without a copy (the header's
//! "DLPack" section).
//!
//! [`Blob::to_dlpack`] returns a [`DlpackTensor`] that owns a `DLManagedTensorVersioned`
//! viewing the blob's memory ([`Blob::to_dlpack_legacy`]: a [`LegacyDlpackTensor`] owning the
//! older `DLManagedTensor`). Exactly one party calls the tensor's deleter:
//!
//! - the wrapper, when it is dropped;
//! - a consumer, once [`DlpackTensor::into_raw`] has handed it the pointer (the wrapper then does
//!   nothing);
//! - cblob, once [`Blob::from_dlpack`] has taken the tensor in (it deletes it when nothing uses
//!   the memory any more).
//!
//! ```
//! use cblob::{Blob, Context, DType, Memory, Part};
//!
//! let ctx = Context::new()?;
//! let mut blob = Blob::new(&ctx, DType::Float32, &[2, 3])?;
//! blob.copy_in(Part::Data, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let tensor = blob.to_dlpack(Part::Data, Memory::Host, true)?;
//! assert_eq!((tensor.shape(), tensor.element_type(), tensor.is_read_only()), (&[2i64, 3][..], Some(DType::Float32), true));
//! let raw = tensor.into_raw(); // for a consumer, which calls (*raw).deleter once
//! # drop(unsafe { cblob::DlpackTensor::from_raw(raw) });
//!
//! // And back: a blob over the same memory, with view tracking shared with `blob`.
//! let back = Blob::from_dlpack(&ctx, blob.to_dlpack(Part::Data, Memory::Host, false)?)?;
//! assert_eq!(back.to_vec::<f32>(Part::Data)?, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! # Ok::<(), cblob::Error>(())
//! ```
//!
//! The structs mirror DLPack's own header (`dlpack/dlpack.h`, which cblob installs as
//! `<cblob/dlpack.h>`), field for field; the crate's tests check their sizes and offsets against
//! that header compiled by the C compiler.
use std::fmt;
use std::mem;
use std::ptr::NonNull;
use std::slice;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::{sys, Blob, DType, Element, Status};

#[path = "dlpack_generated.rs"]
mod generated;
pub use generated::*;

/// Accessors both owned tensor types share, through their `raw()` (the plain field getters are
/// generated: dlpack_generated.rs).
macro_rules! tensor_accessors {
    () => {
        /// The `DLTensor` (the tensor's fields, read-only).
        pub fn tensor(&self) -> &DLTensor {
            &self.raw().dl_tensor
        }

        /// The cblob dtype of the elements, if cblob has one.
        pub fn element_type(&self) -> Option<DType> {
            self.dtype().dtype()
        }

        /// The dimensions.
        pub fn shape(&self) -> &[i64] {
            let t = self.tensor();
            // SAFETY: a valid tensor has ndim dimensions at shape until its deleter runs, and the
            // deleter runs only when self is gone.
            unsafe { dims(t.shape, t.ndim) }
        }

        /// The strides in elements, or `None` for C-contiguous (cblob's exports).
        pub fn strides(&self) -> Option<&[i64]> {
            let t = self.tensor();
            // SAFETY: as in shape.
            (!t.strides.is_null()).then(|| unsafe { dims(t.strides, t.ndim) })
        }

        /// The number of elements (the product of the dimensions; 1 for no axes).
        pub fn count(&self) -> i64 {
            self.shape().iter().product()
        }

        /// The elements as a slice, for a C-contiguous host tensor (`kDLCPU` or `kDLCUDAHost`)
        /// of `T`'s dtype; [`Status::InvalidArgument`] for device memory or strides that are not
        /// row-major, [`Status::DType`] for another element type.
        ///
        /// # Safety
        /// Nothing else may write the memory while the slice lives: not the blob the tensor
        /// was exported from (through a view, a call or a mutable view of a blob sharing its
        /// memory), not a consumer.
        pub unsafe fn host_slice<T: Element>(&self) -> Result<&[T]> {
            let (ptr, len) = host_elements::<T>(self.tensor())?;
            Ok(slice::from_raw_parts(ptr, len))
        }
    };
}

/// An owned `DLManagedTensorVersioned`: its deleter runs once, when this is dropped, unless
/// [`into_raw`](Self::into_raw) handed it to a consumer or [`Blob::from_dlpack`] to cblob.
///
/// `Send` (DLPack deleters may run on any thread), not `Sync`. An exported tensor and its
/// blob view one memory: [`host_slice`](Self::host_slice) and writes through
/// [`data`](Self::data) are `unsafe`, as with [`Blob::gpu_ptr`].
pub struct DlpackTensor {
    raw: NonNull<DLManagedTensorVersioned>,
    /// The view tracking of the memory, for an export of a Rust `Blob`.
    memory: Option<Arc<crate::memory::Memory>>,
}

// SAFETY: the struct is owned by this value alone, and DLPack's deleters may run on any thread
// (cblob's do).
unsafe impl Send for DlpackTensor {}

impl DlpackTensor {
    /// Takes ownership of a tensor from elsewhere (another producer, or an earlier
    /// [`into_raw`](Self::into_raw)): dropping the result calls its deleter.
    /// [`Status::InvalidArgument`] for NULL.
    ///
    /// # Safety
    /// `ptr` must point to a valid `DLManagedTensorVersioned` of DLPack major version 1 (or one
    /// whose deleter is the only field used: then call nothing but `drop` and
    /// [`version`](Self::version)) whose deleter the caller gives up; its shape, strides and
    /// memory must stay valid until the deleter runs. If it views the memory of a Rust [`Blob`],
    /// the crate's view tracking does not know it: the caller keeps the rule that nothing
    /// writes memory while a view of it lives.
    pub unsafe fn from_raw(ptr: *mut sys::DLManagedTensorVersioned) -> Result<DlpackTensor> {
        let raw = NonNull::new(ptr.cast()).ok_or_else(|| Error::new(Status::InvalidArgument, "a NULL DLPack tensor"))?;
        Ok(DlpackTensor { raw, memory: None })
    }

    /// Hands the tensor over: the caller (or the consumer it passes the pointer to) must call
    /// its deleter exactly once.
    pub fn into_raw(self) -> *mut sys::DLManagedTensorVersioned {
        let ptr = self.raw.as_ptr().cast();
        mem::forget(self);
        ptr
    }

    /// The pointer, still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::DLManagedTensorVersioned {
        self.raw.as_ptr().cast()
    }

    /// The whole struct, read-only.
    pub fn raw(&self) -> &DLManagedTensorVersioned {
        // SAFETY: valid until the deleter runs, which happens only once self is gone.
        unsafe { self.raw.as_ref() }
    }

    /// The whole struct, for changes before the tensor is handed on.
    ///
    /// # Safety
    /// The tensor must stay valid: a consumer (or [`Blob::from_dlpack`]) trusts its pointers,
    /// shape and dtype, and the deleter must still free it exactly once.
    pub unsafe fn raw_mut(&mut self) -> &mut DLManagedTensorVersioned {
        self.raw.as_mut()
    }

    /// The DLPack version the producer wrote (cblob writes its header's, 1.3).
    pub fn version(&self) -> DLPackVersion {
        self.raw().version
    }

    /// The flags ([`FLAG_READ_ONLY`], ...).
    pub fn flags(&self) -> u64 {
        self.raw().flags
    }

    /// Whether the consumer must not write the memory (an export with `read_only`).
    pub fn is_read_only(&self) -> bool {
        self.flags() & FLAG_READ_ONLY != 0
    }

    tensor_accessors!();

    /// The elements as a mutable slice; as [`host_slice`](Self::host_slice), and
    /// [`Status::State`] for a read-only tensor.
    ///
    /// # Safety
    /// Nothing else may read or write the memory while the slice lives (see
    /// [`host_slice`](Self::host_slice)).
    pub unsafe fn host_slice_mut<T: Element>(&mut self) -> Result<&mut [T]> {
        if self.is_read_only() {
            return Err(Error::new(Status::State, "the DLPack tensor is read-only"));
        }
        let (ptr, len) = host_elements::<T>(self.tensor())?;
        Ok(slice::from_raw_parts_mut(ptr, len))
    }
}

impl Drop for DlpackTensor {
    fn drop(&mut self) {
        // SAFETY: self owns the tensor and gives it up exactly once; DLPack allows a NULL deleter.
        unsafe {
            if let Some(deleter) = self.raw.as_ref().deleter {
                deleter(self.raw.as_ptr());
            }
        }
    }
}

/// An owned legacy `DLManagedTensor` (no version, no flags: always writable); otherwise as
/// [`DlpackTensor`].
pub struct LegacyDlpackTensor {
    raw: NonNull<DLManagedTensor>,
    memory: Option<Arc<crate::memory::Memory>>,
}

// SAFETY: as for DlpackTensor.
unsafe impl Send for LegacyDlpackTensor {}

impl LegacyDlpackTensor {
    /// Takes ownership of a tensor from elsewhere: dropping the result calls its deleter.
    /// [`Status::InvalidArgument`] for NULL.
    ///
    /// # Safety
    /// As for [`DlpackTensor::from_raw`], for a valid `DLManagedTensor`.
    pub unsafe fn from_raw(ptr: *mut sys::DLManagedTensor) -> Result<LegacyDlpackTensor> {
        let raw = NonNull::new(ptr.cast()).ok_or_else(|| Error::new(Status::InvalidArgument, "a NULL DLPack tensor"))?;
        Ok(LegacyDlpackTensor { raw, memory: None })
    }

    /// Hands the tensor over: the caller (or the consumer it passes the pointer to) must call
    /// its deleter exactly once.
    pub fn into_raw(self) -> *mut sys::DLManagedTensor {
        let ptr = self.raw.as_ptr().cast();
        mem::forget(self);
        ptr
    }

    /// The pointer, still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::DLManagedTensor {
        self.raw.as_ptr().cast()
    }

    /// The whole struct, read-only.
    pub fn raw(&self) -> &DLManagedTensor {
        // SAFETY: valid until the deleter runs, which happens only once self is gone.
        unsafe { self.raw.as_ref() }
    }

    /// The whole struct, for changes before the tensor is handed on.
    ///
    /// # Safety
    /// As for [`DlpackTensor::raw_mut`].
    pub unsafe fn raw_mut(&mut self) -> &mut DLManagedTensor {
        self.raw.as_mut()
    }

    tensor_accessors!();

    /// The elements as a mutable slice; as [`host_slice`](Self::host_slice).
    ///
    /// # Safety
    /// Nothing else may read or write the memory while the slice lives.
    pub unsafe fn host_slice_mut<T: Element>(&mut self) -> Result<&mut [T]> {
        let (ptr, len) = host_elements::<T>(self.tensor())?;
        Ok(slice::from_raw_parts_mut(ptr, len))
    }
}

impl Drop for LegacyDlpackTensor {
    fn drop(&mut self) {
        // SAFETY: as for DlpackTensor.
        unsafe {
            if let Some(deleter) = self.raw.as_ref().deleter {
                deleter(self.raw.as_ptr());
            }
        }
    }
}

impl fmt::Debug for DlpackTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DlpackTensor")
            .field("device", &self.device())
            .field("dtype", &self.dtype())
            .field("shape", &self.shape())
            .field("flags", &self.flags())
            .finish()
    }
}

impl fmt::Debug for LegacyDlpackTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacyDlpackTensor")
            .field("device", &self.device())
            .field("dtype", &self.dtype())
            .field("shape", &self.shape())
            .finish()
    }
}

/// `ndim` values at `ptr` (none for NULL or ndim <= 0).
///
/// # Safety
/// `ptr` must be NULL or hold `ndim` values that outlive `'a`.
unsafe fn dims<'a>(ptr: *const i64, ndim: i32) -> &'a [i64] {
    match usize::try_from(ndim) {
        Ok(n) if n > 0 && !ptr.is_null() => slice::from_raw_parts(ptr, n),
        _ => &[],
    }
}

/// The first element and the element count of a C-contiguous host tensor of T.
fn host_elements<T: Element>(t: &DLTensor) -> Result<(*mut T, usize)> {
    if t.device.device_type != DEVICE_CPU && t.device.device_type != DEVICE_CUDA_HOST {
        return Err(Error::new(Status::InvalidArgument, format!("the DLPack tensor is on device type {}, not host memory", t.device.device_type)));
    }
    if DLDataType::of(T::DTYPE) != t.dtype {
        return Err(Error::new(Status::DType, format!("the DLPack tensor holds {:?}, not {:?}", t.dtype, T::DTYPE)));
    }
    // SAFETY: a valid tensor (the callers' contract).
    let shape = unsafe { dims(t.shape, t.ndim) };
    let count = shape.iter().try_fold(1usize, |n, &d| usize::try_from(d).ok().and_then(|d| n.checked_mul(d)));
    let count = count.ok_or_else(|| Error::new(Status::Shape, format!("the DLPack tensor's shape {shape:?} has no element count")))?;
    if count == 0 {
        return Ok((NonNull::dangling().as_ptr(), 0));
    }
    if !t.strides.is_null() {
        // SAFETY: as above.
        let strides = unsafe { dims(t.strides, t.ndim) };
        let mut expected = 1i64;
        for (&d, &s) in shape.iter().zip(strides).rev() {
            if d != 1 && s != expected {
                return Err(Error::new(Status::InvalidArgument, "the DLPack tensor is not C-contiguous"));
            }
            expected *= d;
        }
    }
    let first = (t.data as usize).wrapping_add(t.byte_offset as usize) as *mut T;
    if t.data.is_null() || !first.is_aligned() {
        return Err(Error::new(Status::InvalidArgument, "the DLPack tensor's data is NULL or not aligned for its elements"));
    }
    Ok((first, count))
}

/// A failed [`Blob::from_dlpack`]: the error, and the tensor, which stays the caller's (its
/// deleter has not run). Converting it into an [`Error`] (as `?` does) drops the tensor, which
/// runs its deleter.
pub struct ImportError<T> {
    error: Error,
    tensor: T,
}

impl<T> ImportError<T> {
    /// Why the tensor was refused.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The tensor, still the caller's.
    pub fn into_tensor(self) -> T {
        self.tensor
    }

    /// The error and the tensor.
    pub fn into_parts(self) -> (Error, T) {
        (self.error, self.tensor)
    }
}

impl<T> From<ImportError<T>> for Error {
    fn from(e: ImportError<T>) -> Error {
        e.error
    }
}

impl<T> fmt::Debug for ImportError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImportError").field("error", &self.error).finish_non_exhaustive()
    }
}

impl<T> fmt::Display for ImportError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<T> std::error::Error for ImportError<T> {}

impl Blob {
    /// A blob just made over an imported tensor, which cblob owns now (`_handed_over`: the
    /// pointer the wrapper gave up): its data joins the view tracking of the blob the tensor
    /// was exported from, if any.
    fn joining<P>(mut self, memory: Option<Arc<crate::memory::Memory>>, _handed_over: *mut P) -> Blob {
        if let Some(memory) = memory {
            self.data = memory;
        }
        self
    }
}
