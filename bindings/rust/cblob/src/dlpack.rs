// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): DLPack, owned tensors that call their
// deleter once, and the imports that take them.
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
//! The structs below mirror DLPack's own header (`dlpack/dlpack.h`, which cblob installs as
//! `<cblob/dlpack.h>`), field for field; the crate's tests check their sizes and offsets against
//! that header compiled by the C compiler.
use std::ffi::c_void;
use std::fmt;
use std::mem;
use std::ptr::NonNull;
use std::slice;
use std::sync::Arc;

use crate::error::{check, Error, Result};
use crate::memory::{with_access, Access};
use crate::{sys, Blob, Context, DType, Element, Memory, Part, Status};

/// `kDLCPU`: host memory.
pub const DEVICE_CPU: i32 = 1;
/// `kDLCUDA`: CUDA device memory.
pub const DEVICE_CUDA: i32 = 2;
/// `kDLCUDAHost`: pinned host memory (`cudaMallocHost`).
pub const DEVICE_CUDA_HOST: i32 = 3;
/// `kDLCUDAManaged`: CUDA managed memory (not taken by cblob).
pub const DEVICE_CUDA_MANAGED: i32 = 13;

/// `kDLInt`: signed integers.
pub const CODE_INT: u8 = 0;
/// `kDLUInt`: unsigned integers.
pub const CODE_UINT: u8 = 1;
/// `kDLFloat`: IEEE floats.
pub const CODE_FLOAT: u8 = 2;
/// `kDLBfloat`: bfloat16 (not taken by cblob).
pub const CODE_BFLOAT: u8 = 4;
/// `kDLBool` (not taken by cblob).
pub const CODE_BOOL: u8 = 6;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the memory.
pub const FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy for this tensor.
pub const FLAG_IS_COPIED: u64 = 2;

/// The DLPack major version cblob reads (and the one [`DLManagedTensorVersioned::version`]
/// carries in its exports).
pub const MAJOR_VERSION: u32 = 1;

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DLPackVersion {
    /// A different major means a different layout after `flags`.
    pub major: u32,
    /// New enum values within one major.
    pub minor: u32,
}

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DLDevice {
    /// `DLDeviceType` ([`DEVICE_CPU`], [`DEVICE_CUDA`], [`DEVICE_CUDA_HOST`], ...).
    pub device_type: i32,
    /// The device's index (0 for host memory).
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DLDataType {
    /// `DLDataTypeCode` ([`CODE_INT`], [`CODE_UINT`], [`CODE_FLOAT`], ...).
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes per element (1 for scalars).
    pub lanes: u16,
}

impl DLDataType {
    /// The DLPack type of a cblob dtype (float32 is `kDLFloat` 32, int32 `kDLInt` 32, ...).
    pub fn of(dtype: DType) -> DLDataType {
        let (code, bits) = match dtype {
            DType::Float32 => (CODE_FLOAT, 32),
            DType::Float64 => (CODE_FLOAT, 64),
            DType::Int32 => (CODE_INT, 32),
            DType::Uint32 => (CODE_UINT, 32),
        };
        DLDataType { code, bits, lanes: 1 }
    }

    /// The cblob dtype of this DLPack type, if cblob has one.
    pub fn dtype(self) -> Option<DType> {
        DType::ALL.iter().copied().find(|&d| DLDataType::of(d) == self)
    }
}

/// `DLTensor`: the view itself. Its pointers belong to whoever made it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// The memory (a device address for device memory); NULL for a tensor without elements.
    pub data: *mut c_void,
    /// Where `data` lives.
    pub device: DLDevice,
    /// The number of axes.
    pub ndim: i32,
    /// The element type.
    pub dtype: DLDataType,
    /// `ndim` dimensions.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or NULL for C-contiguous.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (DLPack before 1.0): a tensor and its deleter, without version or flags.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The view.
    pub dl_tensor: DLTensor,
    /// The producer's context for the deleter.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor and lets go of the memory; NULL when there is nothing to free.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned` (DLPack 1.0 and later).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version the producer wrote.
    pub version: DLPackVersion,
    /// The producer's context for the deleter.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor and lets go of the memory; NULL when there is nothing to free.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// [`FLAG_READ_ONLY`], [`FLAG_IS_COPIED`], ...
    pub flags: u64,
    /// The view.
    pub dl_tensor: DLTensor,
}

/// Accessors both owned tensor types share, through their `raw()`.
macro_rules! tensor_accessors {
    () => {
        /// The `DLTensor` (the tensor's fields, read-only).
        pub fn tensor(&self) -> &DLTensor {
            &self.raw().dl_tensor
        }

        /// The data pointer: the first element for cblob's exports (a device address for
        /// device memory, which host code must not dereference); NULL without elements.
        pub fn data(&self) -> *mut c_void {
            self.tensor().data
        }

        /// Bytes from [`data`](Self::data) to the first element (0 in cblob's exports).
        pub fn byte_offset(&self) -> u64 {
            self.tensor().byte_offset
        }

        /// Where the memory lives: [`DEVICE_CPU`], [`DEVICE_CUDA_HOST`] (pinned host memory) or
        /// [`DEVICE_CUDA`] for cblob's exports.
        pub fn device(&self) -> DLDevice {
            self.tensor().device
        }

        /// The element type as DLPack codes it.
        pub fn dtype(&self) -> DLDataType {
            self.tensor().dtype
        }

        /// The cblob dtype of the elements, if cblob has one.
        pub fn element_type(&self) -> Option<DType> {
            self.dtype().dtype()
        }

        /// The number of axes (`ndim`).
        pub fn ndim(&self) -> i32 {
            self.tensor().ndim
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
    /// Exports data or diff as a DLPack tensor viewing it, without copying (the header's
    /// `cblob_blob_to_dlpack`). [`Memory::Host`] gives `kDLCPU` (`kDLCUDAHost` for pinned
    /// memory), [`Memory::Device`] `kDLCUDA` (needs a GPU: without one, the no-GPU status). The
    /// export moves the head as [`Blob::data`] (`read_only`, which also sets the tensor's
    /// read-only flag) or [`Blob::data_mut`] would, so the copy it views is current now; like a
    /// pointer from [`Blob::gpu_ptr`], it stays the same memory afterwards, whatever the head.
    ///
    /// The tensor holds the memory until its deleter runs: the blob may be dropped, reshaped
    /// past its capacity or made to share other memory meanwhile. Giving the blob another
    /// buffer ([`Blob::set_cpu_data`] on exported host data) is [`Status::State`] until then. A
    /// writable export is [`Status::State`] while a view of this memory is alive (a read-only
    /// one while a mutable view is).
    pub fn to_dlpack(&self, part: Part, memory: Memory, read_only: bool) -> Result<DlpackTensor> {
        let access = if read_only { Access::Read } else { Access::Write };
        let mut out = std::ptr::null_mut();
        with_access(&[(self.memory(part), access)], || {
            // SAFETY: a live handle used by this thread alone; a valid out-pointer.
            check(unsafe { sys::cblob_blob_to_dlpack(self.as_ptr(), part.raw(), memory.raw(), i32::from(read_only), &mut out) })
        })?;
        // SAFETY: the call succeeded, so out is a new tensor this wrapper now owns.
        let mut tensor = unsafe { DlpackTensor::from_raw(out)? };
        tensor.memory = Some(Arc::clone(self.memory(part)));
        Ok(tensor)
    }

    /// Exports data or diff as a legacy `DLManagedTensor` (for consumers that only take that):
    /// writable, with the head moved as for a write; otherwise as [`Blob::to_dlpack`].
    pub fn to_dlpack_legacy(&self, part: Part, memory: Memory) -> Result<LegacyDlpackTensor> {
        let mut out = std::ptr::null_mut();
        with_access(&[(self.memory(part), Access::Write)], || {
            // SAFETY: as in to_dlpack.
            check(unsafe { sys::cblob_blob_to_dlpack_legacy(self.as_ptr(), part.raw(), memory.raw(), &mut out) })
        })?;
        // SAFETY: as in to_dlpack.
        let mut tensor = unsafe { LegacyDlpackTensor::from_raw(out)? };
        tensor.memory = Some(Arc::clone(self.memory(part)));
        Ok(tensor)
    }

    /// A blob whose data is the tensor's memory, without copying (the header's
    /// `cblob_blob_from_dlpack`): C-contiguous float32, float64, int32 or uint32 on `kDLCPU`,
    /// `kDLCUDAHost` or `kDLCUDA` (the context's device); the diff is new memory. On success
    /// cblob owns the tensor and runs its deleter once nothing uses the memory any more. On
    /// failure the [`ImportError`] gives the error ([`Status::DType`] for another element type,
    /// [`Status::InvalidArgument`] for a read-only tensor, another device or major version,
    /// [`Status::Shape`] for strides that are not row-major, ...) and the tensor back, its
    /// deleter not run.
    ///
    /// A tensor exported from a Rust [`Blob`] keeps that blob's view tracking: the new blob
    /// counts as one that shares its memory.
    pub fn from_dlpack(context: &Context, mut tensor: DlpackTensor) -> std::result::Result<Blob, ImportError<DlpackTensor>> {
        // SAFETY: the tensor is valid (DlpackTensor's invariant); on success cblob owns it.
        let result = Blob::created(|out| unsafe { sys::cblob_blob_from_dlpack(context.as_ptr(), tensor.as_ptr(), out) });
        match result {
            Ok(blob) => Ok(blob.joining(tensor.memory.take(), tensor.into_raw())),
            Err(error) => Err(ImportError { error, tensor }),
        }
    }

    /// [`Blob::from_dlpack`] for a legacy `DLManagedTensor`.
    pub fn from_dlpack_legacy(context: &Context, mut tensor: LegacyDlpackTensor) -> std::result::Result<Blob, ImportError<LegacyDlpackTensor>> {
        // SAFETY: as in from_dlpack.
        let result = Blob::created(|out| unsafe { sys::cblob_blob_from_dlpack_legacy(context.as_ptr(), tensor.as_ptr(), out) });
        match result {
            Ok(blob) => Ok(blob.joining(tensor.memory.take(), tensor.into_raw())),
            Err(error) => Err(ImportError { error, tensor }),
        }
    }

    /// [`Blob::from_dlpack`] with the stream the tensor is ready on (the one a DLPack consumer
    /// passes to the producer's `__dlpack__(stream=...)`): for a CUDA tensor the context's
    /// stream waits for the work queued on `stream` so far, so cblob reads what the producer
    /// wrote. `stream` is a CUstream or cudaStream_t of the tensor's device; null (or
    /// CU_STREAM_LEGACY, DLPack's 1) is the legacy default stream, CU_STREAM_PER_THREAD
    /// (DLPack's 2) the calling thread's, and the context's own stream ([`Context::stream`])
    /// adds no wait. A stream of another device or CUDA context is [`Status::InvalidArgument`]
    /// and the tensor comes back. For a host tensor the stream is not used (it must be ready
    /// when handed over).
    ///
    /// # Safety
    ///
    /// For a CUDA tensor, `stream` must be null, 1, 2, or a live stream: the driver is handed it.
    pub unsafe fn from_dlpack_on_stream(context: &Context, mut tensor: DlpackTensor, stream: *mut c_void) -> std::result::Result<Blob, ImportError<DlpackTensor>> {
        // SAFETY: as in from_dlpack; the stream is the caller's promise.
        let result = Blob::created(|out| unsafe { sys::cblob_blob_from_dlpack_on_stream(context.as_ptr(), tensor.as_ptr(), stream, out) });
        match result {
            Ok(blob) => Ok(blob.joining(tensor.memory.take(), tensor.into_raw())),
            Err(error) => Err(ImportError { error, tensor }),
        }
    }

    /// [`Blob::from_dlpack_on_stream`] for a legacy `DLManagedTensor`.
    ///
    /// # Safety
    ///
    /// As for [`Blob::from_dlpack_on_stream`].
    pub unsafe fn from_dlpack_legacy_on_stream(context: &Context, mut tensor: LegacyDlpackTensor, stream: *mut c_void) -> std::result::Result<Blob, ImportError<LegacyDlpackTensor>> {
        // SAFETY: as in from_dlpack; the stream is the caller's promise.
        let result = Blob::created(|out| unsafe { sys::cblob_blob_from_dlpack_legacy_on_stream(context.as_ptr(), tensor.as_ptr(), stream, out) });
        match result {
            Ok(blob) => Ok(blob.joining(tensor.memory.take(), tensor.into_raw())),
            Err(error) => Err(ImportError { error, tensor }),
        }
    }

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
