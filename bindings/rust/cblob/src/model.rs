// SPDX-License-Identifier: BSD-2-Clause
//! Caffe nets' weights (`.caffemodel` files) as plain Rust values: a judgement of Rust's (a model
//! whose layers own their blobs, so that the borrow checker governs them), read from and written
//! through a [`Net`], the library's model handle.
use std::path::Path;

use crate::error::Result;
use crate::memory::{with_access, Access};
use crate::{Blob, Context, Net, NetFormat, Part};

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

impl Model {
    /// An empty model to fill with [`Model::add_layer`] and save.
    pub fn new(format: NetFormat, name: Option<&str>) -> Model {
        Model { name: name.map(str::to_owned), format, layers: Vec::new() }
    }

    /// Reads a serialized NetParameter (a `.caffemodel`) in the current or the V1 format, every
    /// layer in file order. Each blob is float32, or float64 where the file holds `double_data`.
    /// Malformed input is [`Status::Parse`](crate::Status::Parse), with the field path and byte offset.
    pub fn open(context: &Context, bytes: &[u8]) -> Result<Model> {
        Model::read(&Net::open(context, bytes)?)
    }

    /// Reads a `.caffemodel` file as [`Model::open`] does ([`Net::open_file`]: with `pread`
    /// straight into the blobs' arrays, never mapped).
    pub fn open_file(context: &Context, path: impl AsRef<Path>) -> Result<Model> {
        Model::read(&Net::open_file(context, path)?)
    }

    /// Reads a net whole, taking a hold on every blob (the net is dropped after, the blobs live on).
    pub(crate) fn read(net: &Net) -> Result<Model> {
        let layers = (0..net.num_layers())
            .map(|i| {
                let blobs = (0..net.num_blobs(i)?).map(|j| net.blob(i, j)).collect::<Result<Vec<Blob>>>()?;
                Ok(Layer { name: net.layer_name(i)?, kind: net.layer_type(i)?, blobs })
            })
            .collect::<Result<Vec<Layer>>>()?;
        Ok(Model { name: net.name()?, format: net.format()?, layers })
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
    /// LayerType name or number is [`Status::InvalidArgument`](crate::Status::InvalidArgument); a message over protobuf's
    /// 2 GiB limit is [`Status::Overflow`](crate::Status::Overflow).
    pub fn to_bytes(&self, write_diff: bool) -> Result<Vec<u8>> {
        self.writing(write_diff, |net| net.to_bytes(write_diff))
    }

    /// Writes the model as a `.caffemodel` file, replacing `path` atomically (a failed save
    /// leaves no partial file).
    pub fn save(&self, path: impl AsRef<Path>, write_diff: bool) -> Result<()> {
        self.writing(write_diff, |net| net.save(path, write_diff))
    }

    /// Builds the library's model over this one's blobs (each layer holds its blobs, nothing is
    /// copied) and runs `write` on it with every blob's memory claimed for reading.
    fn writing<R>(&self, write_diff: bool, write: impl FnOnce(&Net) -> Result<R>) -> Result<R> {
        // The library's model wants a context only to create blobs, which writing never does.
        let context = Context::new()?;
        let mut net = Net::new(&context, self.format, self.name.as_deref())?;
        let mut uses = Vec::new();
        for layer in &self.layers {
            let blobs: Vec<&Blob> = layer.blobs.iter().collect();
            net.add_layer(&layer.name, &layer.kind, &blobs)?;
            for blob in &layer.blobs {
                uses.push((blob.memory(Part::Data), Access::Read));
                if write_diff {
                    uses.push((blob.memory(Part::Diff), Access::Read));
                }
            }
        }
        with_access(&uses, || write(&net))
    }
}
