// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the File type, and the model a file lends
// (cblob_file_model), whose lifetime the borrow checker ties to the file.
//! Files of any kind: [`File::open`] reads a `.caffemodel`, a `.binaryproto`, a BlobProtoVector,
//! a `.npy`, an `.npz`, a `.safetensors` file or a `.npy` folder once, telling the kind from the
//! bytes; a file the library cannot read is refused with a message that says what it is (a
//! prototxt, an HDF5 snapshot, a zip, a pickle, ...). The one-call methods (`open`, `kind`,
//! `num_blobs`, `blob`, `save_npy_folder`) are generated (generated.rs).
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::{self, NonNull};

use crate::error::{check, Error, Result};
use crate::{sys, Model, Net, Status};

/// A file opened whatever it holds: a model ([`File::net`], [`File::model`]) for a net, an
/// `.npz`, a safetensors file or a `.npy` folder; blobs ([`File::blob`]) for a BlobProto, a
/// BlobProtoVector or a `.npy` file. Dropping it frees the file and its model; blobs taken from
/// it live on.
///
/// ```
/// use cblob::{Context, File, FileKind};
///
/// let ctx = Context::new()?;
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../samples/tiny_lenet.caffemodel");
/// let file = File::open(&ctx, path, &[], None)?; // samples/tiny_lenet.caffemodel
/// assert_eq!(file.kind()?, FileKind::Net);
/// let net = file.net()?; // borrows the file: it cannot be dropped while `net` lives
/// assert_eq!(net.layer_name(1)?, "conv1");
/// # Ok::<(), cblob::Error>(())
/// ```
#[derive(Debug)]
pub struct File {
    pub(crate) raw: NonNull<sys::cblob_file>,
}

// SAFETY: the library allows distinct files on distinct threads; a file is one handle, used
// through &File only by its getters and the borrowed net's reads, which the library allows.
unsafe impl Send for File {}

/// The model a [`File`] holds, borrowed from it: a [`Net`] (through `Deref`) that lives no
/// longer than the file and is never destroyed by the caller (the file frees it). Only `&Net`
/// is reachable, so it can be read, exported and saved, and be the weights of
/// [`Net::replace_blobs`], but not moved out or changed; open the file with [`Net::open_file`]
/// for net surgery.
#[derive(Debug)]
pub struct FileNet<'f> {
    net: ManuallyDrop<Net>,
    _file: std::marker::PhantomData<&'f File>,
}

impl Deref for FileNet<'_> {
    type Target = Net;

    fn deref(&self) -> &Net {
        &self.net
    }
}

impl File {
    /// The model of a net, an `.npz`, a safetensors file or a `.npy` folder, borrowed from the
    /// file (a file of blobs is [`Status::State`]). A model read from an `.npz`, a safetensors
    /// file or a `.npy` folder has the keys' layers.
    pub fn net(&self) -> Result<FileNet<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: the handle is live (self); the model written is the file's own, valid while the
        // file lives, which the returned value's lifetime guarantees.
        check(unsafe { sys::cblob_file_model(self.as_ptr(), &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::Internal, "a NULL cblob_model handle"))?;
        Ok(FileNet { net: ManuallyDrop::new(Net { raw }), _file: std::marker::PhantomData })
    }

    /// The file's model as a plain [`Model`], taking a hold on each blob: it outlives the file.
    pub fn model(&self) -> Result<Model> {
        let net = self.net()?;
        Model::read(&net)
    }
}
