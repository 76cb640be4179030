// SPDX-License-Identifier: BSD-2-Clause
//! Caffe nets' weights (`.caffemodel` files) as plain Rust values.
use std::ffi::CStr;
use std::path::Path;
use std::ptr::{self, NonNull};

use crate::error::{c_path, c_string, check, infallible, read_bytes, text, Error, Result};
use crate::memory::{with_access, Access};
use crate::proto::raw_handles;
use crate::{sys, Blob, Context, NetFormat, Part, Status};

/// A Caffe net's weights: its name, its format, and its layers, each with a name, a type and
/// blobs. Read from a `.caffemodel` ([`Model::open_file`], [`Model::open`]) or built up
/// ([`Model::new`], [`Model::add_layer`]) and saved ([`Model::save`], [`Model::to_bytes`]).
///
/// Unlike the C API's model handle, a `Model` is an ordinary Rust value: its fields are public,
/// and each layer owns its [`Blob`]s (no other `Blob` holds the same handle), so the borrow
/// checker governs them as it governs any `Vec`. Reading a file hands every blob over to the
/// `Model` at once; saving writes the blobs' values at save time. What is kept is what locates
/// blobs: saving writes a weights-only NetParameter (layer names, types and blobs), which is
/// what Caffe's `CopyTrainedLayersFrom` reads.
///
/// ```
/// use cblob::{Blob, Context, DType, Model, NetFormat, Part};
///
/// let ctx = Context::new()?;
/// let mut weights = Blob::new(&ctx, DType::Float32, &[2, 3])?;
/// weights.data_mut::<f32>()?.fill(0.5);
/// let mut model = Model::new(NetFormat::V2, Some("tiny"));
/// model.add_layer("ip", "InnerProduct", vec![weights]);
/// let bytes = model.to_bytes(false)?;
///
/// let read = Model::open(&ctx, &bytes)?;
/// assert_eq!(read.name.as_deref(), Some("tiny"));
/// let ip = read.layer("ip").expect("the layer");
/// assert_eq!((ip.kind.as_str(), ip.blobs[0].shape()), ("InnerProduct", vec![2, 3]));
/// assert_eq!(ip.blobs[0].asum(Part::Data)?, 3.0);
/// # Ok::<(), cblob::Error>(())
/// ```
#[derive(Debug)]
pub struct Model {
    /// The net's name (`None` when the file has none).
    pub name: Option<String>,
    /// How the layers are stored; saving writes this format. A [`NetFormat::V1`] model's layer
    /// types are LayerType names (`"CONVOLUTION"`) or numbers.
    pub format: NetFormat,
    /// The layers, in file order (those without blobs too).
    pub layers: Vec<Layer>,
}

/// One layer of a [`Model`].
#[derive(Debug)]
pub struct Layer {
    /// The layer's name (`""` when the file gives none).
    pub name: String,
    /// Caffe's layer type: the type string of the current format (`"Convolution"`), or the
    /// LayerType enum name of V1 (`"CONVOLUTION"`).
    pub kind: String,
    /// The layer's parameter blobs (none for layers such as pooling).
    pub blobs: Vec<Blob>,
}

impl Layer {
    /// A layer with a name, a type and blobs.
    pub fn new(name: impl Into<String>, kind: impl Into<String>, blobs: Vec<Blob>) -> Layer {
        Layer { name: name.into(), kind: kind.into(), blobs }
    }
}

/// The C model handle, destroyed on every path.
struct Handle(NonNull<sys::cblob_model>);

impl Handle {
    fn created(call: impl FnOnce(*mut *mut sys::cblob_model) -> sys::cblob_status) -> Result<Handle> {
        let mut raw = ptr::null_mut();
        check(call(&mut raw))?;
        NonNull::new(raw).map(Handle).ok_or_else(|| Error::new(Status::Internal, "a NULL model handle"))
    }

    fn ptr(&self) -> *mut sys::cblob_model {
        self.0.as_ptr()
    }

    /// A text the library owns until the model is destroyed, copied.
    fn text(&self, call: impl FnOnce(*const sys::cblob_model, *mut *const sys::c_char) -> sys::cblob_status) -> Result<Option<String>> {
        let mut value = ptr::null();
        check(call(self.ptr(), &mut value))?;
        // SAFETY: NULL or a NUL-terminated string the model owns; copied before it can go.
        Ok((!value.is_null()).then(|| unsafe { text(value) }))
    }

    /// Reads everything into a Model, taking a hold on every blob.
    fn read(&self) -> Result<Model> {
        let (mut format, mut count) = (0, 0i64);
        // SAFETY (all calls below): pure getters on a live model with valid out-pointers.
        infallible(unsafe { sys::cblob_model_format(self.ptr(), &mut format) });
        infallible(unsafe { sys::cblob_model_num_layers(self.ptr(), &mut count) });
        let format = NetFormat::from_raw(format).ok_or_else(|| Error::new(Status::Internal, format!("net format {format} is unknown to this crate")))?;
        let name = self.text(|m, out| unsafe { sys::cblob_model_name(m, out) })?;
        let mut layers = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        for i in 0..count {
            let name = self.text(|m, out| unsafe { sys::cblob_model_layer_name(m, i, out) })?.unwrap_or_default();
            let kind = self.text(|m, out| unsafe { sys::cblob_model_layer_type(m, i, out) })?.unwrap_or_default();
            let mut num_blobs = 0i64;
            check(unsafe { sys::cblob_model_layer_num_blobs(self.ptr(), i, &mut num_blobs) })?;
            let blobs = (0..num_blobs)
                .map(|j| Blob::created(|out| unsafe { sys::cblob_model_layer_blob(self.ptr(), i, j, out) }))
                .collect::<Result<Vec<Blob>>>()?;
            layers.push(Layer { name, kind, blobs });
        }
        Ok(Model { name, format, layers })
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the only hold on the model; its blobs stay valid for the holds taken from it.
        unsafe { sys::cblob_model_destroy(self.ptr()) }
    }
}

impl Model {
    /// An empty model to fill with [`Model::add_layer`] and save.
    pub fn new(format: NetFormat, name: Option<&str>) -> Model {
        Model { name: name.map(str::to_owned), format, layers: Vec::new() }
    }

    /// Reads a serialized NetParameter (a `.caffemodel`) in the current or the V1 format, every
    /// layer in file order. Each blob is float32, or float64 where the file holds `double_data`.
    /// Malformed input is [`Status::Parse`], with the field path and byte offset.
    pub fn open(context: &Context, bytes: &[u8]) -> Result<Model> {
        // SAFETY: bytes describes a readable slice.
        Handle::created(|out| unsafe { sys::cblob_model_open(context.as_ptr(), bytes.as_ptr(), bytes.len(), out) })?.read()
    }

    /// Reads a `.caffemodel` file as [`Model::open`] does; the file is mapped, not read whole.
    pub fn open_file(context: &Context, path: impl AsRef<Path>) -> Result<Model> {
        let path = c_path(path.as_ref())?;
        // SAFETY: path is NUL-terminated.
        Handle::created(|out| unsafe { sys::cblob_model_open_file(context.as_ptr(), path.as_ptr(), out) })?.read()
    }

    /// The index of the first layer with this name.
    pub fn find_layer(&self, name: &str) -> Option<usize> {
        self.layers.iter().position(|l| l.name == name)
    }

    /// The first layer with this name.
    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// The first layer with this name, to change its blobs.
    pub fn layer_mut(&mut self, name: &str) -> Option<&mut Layer> {
        self.layers.iter_mut().find(|l| l.name == name)
    }

    /// Appends a layer; the model takes the blobs (their values at save time are written).
    pub fn add_layer(&mut self, name: impl Into<String>, kind: impl Into<String>, blobs: Vec<Blob>) -> &mut Layer {
        self.layers.push(Layer::new(name, kind, blobs));
        self.layers.last_mut().expect("just pushed")
    }

    /// Serializes the model as a NetParameter in its format: the name, then each layer's name,
    /// type and blobs (with their diffs when `write_diff`). A V1 model's layer type that is no
    /// LayerType name or number is [`Status::InvalidArgument`]; a message over protobuf's
    /// 2 GiB limit is [`Status::Overflow`].
    pub fn to_bytes(&self, write_diff: bool) -> Result<Vec<u8>> {
        self.writing(write_diff, |model| {
            // SAFETY: a live model whose blobs are borrowed for the call.
            read_bytes(|buffer, size, out| unsafe { sys::cblob_model_to_proto(model, i32::from(write_diff), buffer, size, out) })
        })
    }

    /// Writes the model as a `.caffemodel` file, replacing `path` atomically (a failed save
    /// leaves no partial file).
    pub fn save(&self, path: impl AsRef<Path>, write_diff: bool) -> Result<()> {
        let path = c_path(path.as_ref())?;
        self.writing(write_diff, |model| {
            // SAFETY: a live model; path is NUL-terminated.
            check(unsafe { sys::cblob_model_to_proto_file(model, i32::from(write_diff), path.as_ptr()) })
        })
    }

    /// Builds the library's model over this one's blobs (each layer holds its blobs, nothing is
    /// copied) and runs `write` on it with every blob's memory claimed for reading.
    fn writing<R>(&self, write_diff: bool, write: impl FnOnce(*const sys::cblob_model) -> Result<R>) -> Result<R> {
        // The library's model wants a context only to create blobs, which writing never does.
        let context = Context::new()?;
        let name = self.name.as_deref().map(|n| c_string(n, "the net's name")).transpose()?;
        let name_ptr = name.as_deref().map_or(ptr::null(), CStr::as_ptr);
        // SAFETY: a live context, a valid format value and a NUL-terminated name or NULL.
        let model = Handle::created(|out| unsafe { sys::cblob_model_create(context.as_ptr(), self.format.raw(), name_ptr, out) })?;
        let mut uses = Vec::new();
        for layer in &self.layers {
            let name = c_string(&layer.name, "the layer name")?;
            let kind = c_string(&layer.kind, "the layer type")?;
            let blobs: Vec<&Blob> = layer.blobs.iter().collect();
            let handles = raw_handles(&blobs);
            // SAFETY: live handles the model retains; the strings are NUL-terminated.
            check(unsafe { sys::cblob_model_add_layer(model.ptr(), name.as_ptr(), kind.as_ptr(), handles.as_ptr(), handles.len() as i64) })?;
            for blob in &layer.blobs {
                uses.push((blob.memory(Part::Data), Access::Read));
                if write_diff {
                    uses.push((blob.memory(Part::Diff), Access::Read));
                }
            }
        }
        with_access(&uses, || write(model.ptr()))
    }
}
