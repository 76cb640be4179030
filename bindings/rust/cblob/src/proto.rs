// SPDX-License-Identifier: BSD-2-Clause
//! Caffe's BlobProto and BlobProtoVector (`.binaryproto` files), and telling the kinds of Caffe
//! message apart. A blob's own proto methods are on [`Blob`]; models are [`crate::Model`].
//!
//! Reading checks everything before it creates or changes anything: malformed input is
//! [`Status::Parse`] with a message naming the field and byte offset.
//! Writing always makes a fresh message: float32 blobs write `data`, float64 and integer blobs
//! `double_data` (see the header's "Caffe formats" section).
//!
//! ```
//! use cblob::{Blob, Context, DType, ProtoKind};
//!
//! let ctx = Context::new()?;
//! let mut mean = Blob::new(&ctx, DType::Float32, &[1, 3, 2, 2])?;
//! mean.data_mut::<f32>()?.fill(0.5);
//! let bytes = mean.to_proto(false)?;
//! assert_eq!(cblob::proto::detect(&bytes)?, ProtoKind::Blob);
//! let back = Blob::from_proto(&ctx, &bytes)?;
//! assert_eq!((back.shape(), back.asum(cblob::Part::Data)?), (vec![1, 3, 2, 2], 6.0));
//! # Ok::<(), cblob::Error>(())
//! ```
use std::path::Path;
use std::ptr;
use std::sync::Arc;

use crate::error::{c_path, check, read_bytes, Error, Result};
use crate::memory::{with_access, Access, Memory};
use crate::{sys, Blob, Context, Part, ProtoKind, Status};

impl Blob {
    /// Serializes the blob as a BlobProto (Caffe's `ToProto` into a fresh message): its shape,
    /// its data and, with `write_diff`, its diff. A blob that never had a shape is
    /// [`Status::State`].
    pub fn to_proto(&self, write_diff: bool) -> Result<Vec<u8>> {
        with_access(&self.reads(write_diff), || {
            // SAFETY: live handle used by this thread alone; buffer and size come from read_bytes.
            read_bytes(|buffer, size, out| unsafe { sys::cblob_blob_to_proto(self.as_ptr(), i32::from(write_diff), buffer, size, out) })
        })
    }

    /// Writes the blob as a BlobProto file (a `.binaryproto`), replacing `path` atomically.
    pub fn save_proto(&self, path: impl AsRef<Path>, write_diff: bool) -> Result<()> {
        let path = c_path(path.as_ref())?;
        with_access(&self.reads(write_diff), || {
            // SAFETY: live handle; path is NUL-terminated.
            check(unsafe { sys::cblob_blob_to_proto_file(self.as_ptr(), i32::from(write_diff), path.as_ptr()) })
        })
    }

    /// Loads a serialized BlobProto into this blob (Caffe's `FromProto`). With `reshape` the
    /// blob takes the BlobProto's shape; without, the shapes must be equal by Caffe's
    /// `ShapeEquals` ([`Status::Shape`] otherwise). Values are converted to the blob's dtype;
    /// the diff is loaded when the BlobProto has one. On failure the blob is unchanged.
    pub fn load_proto(&mut self, bytes: &[u8], reshape: bool) -> Result<()> {
        self.loading(|raw| unsafe { sys::cblob_blob_from_proto(raw, bytes.as_ptr(), bytes.len(), i32::from(reshape)) })
    }

    /// Loads a BlobProto file into this blob, as [`Blob::load_proto`] does.
    pub fn load_proto_file(&mut self, path: impl AsRef<Path>, reshape: bool) -> Result<()> {
        let path = c_path(path.as_ref())?;
        self.loading(|raw| unsafe { sys::cblob_blob_from_proto_file(raw, path.as_ptr(), i32::from(reshape)) })
    }

    /// Runs a call that writes data and diff and may replace the storage.
    fn loading(&mut self, call: impl FnOnce(*mut sys::cblob_blob) -> sys::cblob_status) -> Result<()> {
        let (data, diff) = (Arc::clone(&self.data), Arc::clone(&self.diff));
        with_access(&[(&data, Access::Write), (&diff, Access::Write)], || self.reshaping(call))
    }

    /// A new blob from a serialized BlobProto: float64 when it holds `double_data`, else
    /// float32, with its shape, data and diff. The decoded values become the blob's storage.
    pub fn from_proto(context: &Context, bytes: &[u8]) -> Result<Blob> {
        // SAFETY: bytes describes a readable slice.
        Blob::created(|out| unsafe { sys::cblob_blob_create_from_proto(context.as_ptr(), bytes.as_ptr(), bytes.len(), out) })
    }

    /// A new blob from a BlobProto file (a `.binaryproto`), as [`Blob::from_proto`] makes it.
    pub fn from_proto_file(context: &Context, path: impl AsRef<Path>) -> Result<Blob> {
        let path = c_path(path.as_ref())?;
        // SAFETY: path is NUL-terminated.
        Blob::created(|out| unsafe { sys::cblob_blob_create_from_proto_file(context.as_ptr(), path.as_ptr(), out) })
    }

    /// Caffe's `ShapeEquals`: whether this blob's shape is the BlobProto's (legacy dims compare
    /// 1-padded, as Caffe does). Only the shape is read: malformed bytes are [`Status::Parse`].
    pub fn shape_equals_proto(&self, bytes: &[u8]) -> Result<bool> {
        let mut equal = 0;
        // SAFETY: a pure getter on a live handle; bytes describes a readable slice.
        check(unsafe { sys::cblob_blob_shape_equals_proto(self.as_ptr(), bytes.as_ptr(), bytes.len(), &mut equal) })?;
        Ok(equal != 0)
    }

    /// The memories a serialization reads.
    fn reads(&self, write_diff: bool) -> Vec<(&Arc<Memory>, Access)> {
        let mut uses = vec![(self.memory(Part::Data), Access::Read)];
        if write_diff {
            uses.push((self.memory(Part::Diff), Access::Read));
        }
        uses
    }
}

/// Which Caffe message the bytes hold (a net, a BlobProto or a BlobProtoVector), from their
/// top-level fields; the reader of that kind checks the rest.
pub fn detect(bytes: &[u8]) -> Result<ProtoKind> {
    let mut kind = 0;
    // SAFETY: bytes describes a readable slice.
    check(unsafe { sys::cblob_proto_detect(bytes.as_ptr(), bytes.len(), &mut kind) })?;
    known_kind(kind)
}

/// Like [`detect`], for a file (mapped, not read whole).
pub fn detect_file(path: impl AsRef<Path>) -> Result<ProtoKind> {
    let path = c_path(path.as_ref())?;
    let mut kind = 0;
    // SAFETY: path is NUL-terminated.
    check(unsafe { sys::cblob_proto_detect_file(path.as_ptr(), &mut kind) })?;
    known_kind(kind)
}

fn known_kind(raw: sys::cblob_proto_kind) -> Result<ProtoKind> {
    ProtoKind::from_raw(raw).ok_or_else(|| Error::new(Status::Internal, format!("proto kind {raw} is unknown to this crate")))
}

/// Serializes blobs as a BlobProtoVector, each as [`Blob::to_proto`] writes it.
pub fn vector_to_bytes(blobs: &[&Blob], write_diff: bool) -> Result<Vec<u8>> {
    let handles = raw_handles(blobs);
    with_access(&vector_reads(blobs, write_diff), || {
        // SAFETY: every handle is live and borrowed for the call.
        read_bytes(|buffer, size, out| unsafe {
            sys::cblob_blob_vector_to_proto(handles.as_ptr(), handles.len() as i64, i32::from(write_diff), buffer, size, out)
        })
    })
}

/// Writes blobs as a BlobProtoVector file, replacing `path` atomically.
pub fn save_vector(path: impl AsRef<Path>, blobs: &[&Blob], write_diff: bool) -> Result<()> {
    let path = c_path(path.as_ref())?;
    let handles = raw_handles(blobs);
    with_access(&vector_reads(blobs, write_diff), || {
        // SAFETY: every handle is live and borrowed for the call; path is NUL-terminated.
        check(unsafe { sys::cblob_blob_vector_to_proto_file(handles.as_ptr(), handles.len() as i64, i32::from(write_diff), path.as_ptr()) })
    })
}

/// Reads a serialized BlobProtoVector into new blobs, each made as [`Blob::from_proto`] makes it.
pub fn vector_from_bytes(context: &Context, bytes: &[u8]) -> Result<Vec<Blob>> {
    // SAFETY: bytes describes a readable slice; out has room for max handles.
    read_vector(|max, out, count| unsafe { sys::cblob_blob_vector_from_proto(context.as_ptr(), bytes.as_ptr(), bytes.len(), max, out, count) })
}

/// Reads a BlobProtoVector file into new blobs.
pub fn vector_from_file(context: &Context, path: impl AsRef<Path>) -> Result<Vec<Blob>> {
    let path = c_path(path.as_ref())?;
    // SAFETY: path is NUL-terminated; out has room for max handles.
    read_vector(|max, out, count| unsafe { sys::cblob_blob_vector_from_proto_file(context.as_ptr(), path.as_ptr(), max, out, count) })
}

/// Asks for the number of blobs, then reads them into owned handles.
fn read_vector(mut call: impl FnMut(i64, *mut *mut sys::cblob_blob, &mut i64) -> sys::cblob_status) -> Result<Vec<Blob>> {
    let mut count = 0i64;
    check(call(0, ptr::null_mut(), &mut count))?;
    let mut handles = vec![ptr::null_mut(); usize::try_from(count).unwrap_or(0)];
    check(call(handles.len() as i64, handles.as_mut_ptr(), &mut count))?;
    handles.truncate(usize::try_from(count).unwrap_or(0));
    // SAFETY: each handle is a new blob whose hold the caller owns; wrapping them all first
    // means an error below still drops every one.
    let blobs: Vec<Result<Blob>> = handles.into_iter().map(|raw| unsafe { Blob::from_raw(raw) }).collect();
    blobs.into_iter().collect()
}

pub(crate) fn raw_handles(blobs: &[&Blob]) -> Vec<*mut sys::cblob_blob> {
    blobs.iter().map(|b| b.as_ptr()).collect()
}

fn vector_reads<'a>(blobs: &[&'a Blob], write_diff: bool) -> Vec<(&'a Arc<Memory>, Access)> {
    blobs.iter().flat_map(|b| b.reads(write_diff)).collect()
}
