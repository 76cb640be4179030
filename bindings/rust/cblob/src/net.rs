// SPDX-License-Identifier: BSD-2-Clause
//! Nets kept as their bytes: a `.caffemodel` opened whole, with its structure, saved byte for
//! byte, exported to safetensors or NumPy `.npz`, and changed by net surgery.
use std::path::Path;
use std::ptr::{self, NonNull};

use crate::error::{c_path, check, read_bytes, read_text, text, Error, Result};
use crate::{sys, Blob, Context, DType, ExportFlags, JsonFlags, Part, Phase, RuleKind, Status};

/// A Caffe net as the library keeps it: every field of the file it came from (bottoms, tops,
/// phases, rules, layer parameters, fields of Caffe forks), saved byte for byte but for the blob
/// values that changed. Where [`Model`](crate::Model) is a plain Rust value of layers and blobs,
/// a `Net` is the library's model handle: it reads the structure, reads blobs without making
/// handles, exports to safetensors and npz, and replaces blobs from another net.
///
/// ```
/// use cblob::{Context, ExportFlags, Net};
///
/// let ctx = Context::new()?;
/// // net { name: "n" layer { name: "fc" type: "InnerProduct" bottom: "data" } }
/// let bytes = b"\x0a\x01n\xa2\x06\x18\x0a\x02fc\x12\x0cInnerProduct\x1a\x04data";
/// let net = Net::open(&ctx, bytes)?;
/// assert_eq!(net.bottoms(0)?, vec!["data".to_string()]);
/// assert_eq!(net.to_bytes(false)?, bytes.to_vec());
/// let safetensors = net.to_safetensors(&[ExportFlags::TorchNames])?;
/// assert!(Net::open_safetensors(&ctx, &safetensors)?.num_layers() == 0); // fc has no blobs
/// # Ok::<(), cblob::Error>(())
/// ```
#[derive(Debug)]
pub struct Net(NonNull<sys::cblob_model>);

// SAFETY: the library allows distinct models on distinct threads; &Net only reaches the pure
// getters and the exports, which the library guards.
unsafe impl Send for Net {}

/// One include or exclude rule of a layer (Caffe's NetStateRule).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The phase the rule asks for ([`Phase::None`] when it asks none).
    pub phase: Phase,
    /// The lowest level the net may have (`i32::MIN` when unset).
    pub min_level: i32,
    /// The highest level the net may have (`i32::MAX` when unset).
    pub max_level: i32,
    /// Stages the net must have.
    pub stages: Vec<String>,
    /// Stages the net must not have.
    pub not_stages: Vec<String>,
}

/// One param spec of a layer (ParamSpec; V1's param, blobs_lr and weight_decay).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    /// The name layers share the blob by.
    pub name: Option<String>,
    /// The multiplier on the learning rate (1 when unset).
    pub lr_mult: f32,
    /// The multiplier on the weight decay (1 when unset).
    pub decay_mult: f32,
}

fn flags<T: Copy>(list: &[T], raw: impl Fn(T) -> i32) -> i32 {
    list.iter().fold(0, |all, &flag| all | raw(flag))
}

impl Net {
    fn created(call: impl FnOnce(*mut *mut sys::cblob_model) -> sys::cblob_status) -> Result<Net> {
        let mut raw = ptr::null_mut();
        check(call(&mut raw))?;
        NonNull::new(raw).map(Net).ok_or_else(|| Error::new(Status::Internal, "a NULL model handle"))
    }

    fn ptr(&self) -> *mut sys::cblob_model {
        self.0.as_ptr()
    }

    /// Reads a serialized NetParameter (a `.caffemodel`), keeping every field.
    pub fn open(context: &Context, bytes: &[u8]) -> Result<Net> {
        // SAFETY: bytes describes a readable slice.
        Net::created(|out| unsafe { sys::cblob_model_open(context.as_ptr(), bytes.as_ptr(), bytes.len(), out) })
    }

    /// Reads a `.caffemodel` file as [`Net::open`] does.
    pub fn open_file(context: &Context, path: impl AsRef<Path>) -> Result<Net> {
        let path = c_path(path.as_ref())?;
        // SAFETY: path is NUL-terminated.
        Net::created(|out| unsafe { sys::cblob_model_open_file(context.as_ptr(), path.as_ptr(), out) })
    }

    /// Reads safetensors bytes: one layer per layer name, blobs by index (keys `<layer>.<index>`
    /// or PyTorch's names).
    pub fn open_safetensors(context: &Context, bytes: &[u8]) -> Result<Net> {
        // SAFETY: bytes describes a readable slice.
        Net::created(|out| unsafe { sys::cblob_model_open_safetensors(context.as_ptr(), bytes.as_ptr(), bytes.len(), out) })
    }

    /// Reads a `.safetensors` file as [`Net::open_safetensors`] does.
    pub fn open_safetensors_file(context: &Context, path: impl AsRef<Path>) -> Result<Net> {
        let path = c_path(path.as_ref())?;
        // SAFETY: path is NUL-terminated.
        Net::created(|out| unsafe { sys::cblob_model_open_safetensors_file(context.as_ptr(), path.as_ptr(), out) })
    }

    /// Reads `.npz` bytes (keys `<layer>/<index>`).
    pub fn open_npz(context: &Context, bytes: &[u8]) -> Result<Net> {
        // SAFETY: bytes describes a readable slice.
        Net::created(|out| unsafe { sys::cblob_model_open_npz(context.as_ptr(), bytes.as_ptr(), bytes.len(), out) })
    }

    /// Reads a `.npz` file as [`Net::open_npz`] does.
    pub fn open_npz_file(context: &Context, path: impl AsRef<Path>) -> Result<Net> {
        let path = c_path(path.as_ref())?;
        // SAFETY: path is NUL-terminated.
        Net::created(|out| unsafe { sys::cblob_model_open_npz_file(context.as_ptr(), path.as_ptr(), out) })
    }

    /// The number of layers.
    pub fn num_layers(&self) -> usize {
        let mut count = 0i64;
        // SAFETY: a live model and a valid out-pointer.
        check(unsafe { sys::cblob_model_num_layers(self.ptr(), &mut count) }).expect("a live model");
        count as usize
    }

    fn text_at(&self, call: impl FnOnce(*mut *const sys::c_char) -> sys::cblob_status) -> Result<Option<String>> {
        let mut value = ptr::null();
        check(call(&mut value))?;
        // SAFETY: NULL or a NUL-terminated string the model owns; copied at once.
        Ok((!value.is_null()).then(|| unsafe { text(value) }))
    }

    fn count(&self, call: impl FnOnce(*mut i64) -> sys::cblob_status) -> Result<i64> {
        let mut count = 0i64;
        check(call(&mut count))?;
        Ok(count)
    }

    /// A layer's name.
    pub fn layer_name(&self, layer: usize) -> Result<String> {
        // SAFETY: a live model; the library checks the index.
        Ok(self.text_at(|out| unsafe { sys::cblob_model_layer_name(self.ptr(), layer as i64, out) })?.unwrap_or_default())
    }

    /// A layer's type.
    pub fn layer_type(&self, layer: usize) -> Result<String> {
        // SAFETY: as layer_name.
        Ok(self.text_at(|out| unsafe { sys::cblob_model_layer_type(self.ptr(), layer as i64, out) })?.unwrap_or_default())
    }

    /// The names of a layer's input blobs.
    pub fn bottoms(&self, layer: usize) -> Result<Vec<String>> {
        // SAFETY (both calls): a live model; the library checks the indices.
        let n = self.count(|out| unsafe { sys::cblob_model_layer_num_bottoms(self.ptr(), layer as i64, out) })?;
        (0..n).map(|i| Ok(self.text_at(|out| unsafe { sys::cblob_model_layer_bottom(self.ptr(), layer as i64, i, out) })?.unwrap_or_default())).collect()
    }

    /// The names of a layer's output blobs.
    pub fn tops(&self, layer: usize) -> Result<Vec<String>> {
        // SAFETY (both calls): a live model; the library checks the indices.
        let n = self.count(|out| unsafe { sys::cblob_model_layer_num_tops(self.ptr(), layer as i64, out) })?;
        (0..n).map(|i| Ok(self.text_at(|out| unsafe { sys::cblob_model_layer_top(self.ptr(), layer as i64, i, out) })?.unwrap_or_default())).collect()
    }

    /// A layer's phase ([`Phase::None`] when it sets none, always in V1).
    pub fn phase(&self, layer: usize) -> Result<Phase> {
        let mut raw = 0;
        // SAFETY: a live model and a valid out-pointer.
        check(unsafe { sys::cblob_model_layer_phase(self.ptr(), layer as i64, &mut raw) })?;
        Phase::from_raw(raw).ok_or_else(|| Error::new(Status::Parse, format!("layer {layer} has phase {raw}, neither TRAIN nor TEST")))
    }

    /// A layer's include or exclude rules.
    pub fn rules(&self, layer: usize, kind: RuleKind) -> Result<Vec<Rule>> {
        let (l, k) = (layer as i64, kind.raw());
        // SAFETY (all calls): a live model, valid out-pointers; the library checks the indices.
        let n = self.count(|out| unsafe { sys::cblob_model_layer_num_rules(self.ptr(), l, k, out) })?;
        (0..n)
            .map(|i| {
                let (mut phase, mut low, mut high, mut stages, mut not_stages) = (0, 0, 0, 0i64, 0i64);
                check(unsafe { sys::cblob_model_layer_rule(self.ptr(), l, k, i, &mut phase, &mut low, &mut high, &mut stages, &mut not_stages) })?;
                let names = |not: i32, count: i64| -> Result<Vec<String>> {
                    (0..count).map(|j| Ok(self.text_at(|out| unsafe { sys::cblob_model_layer_rule_stage(self.ptr(), l, k, i, not, j, out) })?.unwrap_or_default())).collect()
                };
                Ok(Rule {
                    phase: Phase::from_raw(phase).unwrap_or(Phase::None),
                    min_level: low,
                    max_level: high,
                    stages: names(0, stages)?,
                    not_stages: names(1, not_stages)?,
                })
            })
            .collect()
    }

    /// A layer's param specs.
    pub fn param_specs(&self, layer: usize) -> Result<Vec<ParamSpec>> {
        let l = layer as i64;
        // SAFETY (all calls): a live model, valid out-pointers; the library checks the indices.
        let n = self.count(|out| unsafe { sys::cblob_model_layer_num_param_specs(self.ptr(), l, out) })?;
        (0..n)
            .map(|i| {
                let (mut lr, mut decay) = (0f32, 0f32);
                let name = self.text_at(|out| unsafe { sys::cblob_model_layer_param_spec(self.ptr(), l, i, out, &mut lr, &mut decay) })?;
                Ok(ParamSpec { name, lr_mult: lr, decay_mult: decay })
            })
            .collect()
    }

    /// A layer's parameters as a JSON object (`convolution_param` and the like, by Caffe's field
    /// names; fields no schema knows under `unknown_fields`).
    pub fn params_json(&self, layer: usize, flags: &[JsonFlags]) -> Result<String> {
        let raw = self::flags(flags, JsonFlags::raw);
        // SAFETY: a live model; the buffer convention is the library's.
        read_text(|buffer, size, length| unsafe { sys::cblob_model_layer_params_json(self.ptr(), layer as i64, raw, buffer, size, length) })
    }

    /// A layer as `cblob inspect --json` (schema 2) lists it.
    pub fn layer_json(&self, layer: usize, flags: &[JsonFlags]) -> Result<String> {
        let raw = self::flags(flags, JsonFlags::raw);
        // SAFETY: as params_json.
        read_text(|buffer, size, length| unsafe { sys::cblob_model_layer_json(self.ptr(), layer as i64, raw, buffer, size, length) })
    }

    /// The number of a layer's blobs.
    pub fn num_blobs(&self, layer: usize) -> Result<usize> {
        // SAFETY: a live model; the library checks the index.
        Ok(self.count(|out| unsafe { sys::cblob_model_layer_num_blobs(self.ptr(), layer as i64, out) })? as usize)
    }

    /// One of a layer's blobs, as a new holder: changes made through it are what the net saves.
    pub fn blob(&self, layer: usize, index: usize) -> Result<Blob> {
        // SAFETY: a live model; the library checks the indices.
        Blob::created(|out| unsafe { sys::cblob_model_layer_blob(self.ptr(), layer as i64, index as i64, out) })
    }

    /// A blob's shape, without making its handle.
    pub fn blob_shape(&self, layer: usize, index: usize) -> Result<Vec<i64>> {
        let mut dims = vec![0i64; 32];
        let mut axes = 0i32;
        // SAFETY: a live model; dims has room for 32 axes.
        check(unsafe { sys::cblob_model_layer_blob_shape(self.ptr(), layer as i64, index as i64, 32, dims.as_mut_ptr(), &mut axes) })?;
        dims.truncate(axes as usize);
        Ok(dims)
    }

    /// A blob's dtype, without making its handle.
    pub fn blob_dtype(&self, layer: usize, index: usize) -> Result<DType> {
        let mut raw = 0;
        // SAFETY: a live model and a valid out-pointer.
        check(unsafe { sys::cblob_model_layer_blob_dtype(self.ptr(), layer as i64, index as i64, &mut raw) })?;
        DType::from_raw(raw).ok_or_else(|| Error::new(Status::DType, format!("dtype {raw} is unknown to this crate")))
    }

    /// A copy of a blob's data or diff, without making its handle; `T` must be its dtype's
    /// element type (`f32` for float32, ...), else [`Status::DType`].
    pub fn read_blob<T: crate::Element + Default>(&self, layer: usize, index: usize, part: Part) -> Result<Vec<T>> {
        let dtype = self.blob_dtype(layer, index)?;
        if dtype != T::DTYPE {
            return Err(Error::new(Status::DType, format!("the blob is {dtype:?}, not {:?}", T::DTYPE)));
        }
        let count: i64 = self.blob_shape(layer, index)?.iter().product();
        let mut values = vec![T::default(); count as usize];
        // SAFETY: values has room for count elements of the blob's dtype.
        check(unsafe {
            sys::cblob_model_layer_blob_read(self.ptr(), layer as i64, index as i64, part.raw(), 0, count, values.as_mut_ptr().cast(),
                                            values.len() * std::mem::size_of::<T>())
        })?;
        Ok(values)
    }

    /// Serializes the net: the bytes it was read from, changed blobs' values aside.
    pub fn to_bytes(&self, write_diff: bool) -> Result<Vec<u8>> {
        // SAFETY: a live model; the buffer convention is the library's.
        read_bytes(|buffer, size, out| unsafe { sys::cblob_model_to_proto(self.ptr(), i32::from(write_diff), buffer, size, out) })
    }

    /// Writes the net as a `.caffemodel` file, atomically.
    pub fn save(&self, path: impl AsRef<Path>, write_diff: bool) -> Result<()> {
        let path = c_path(path.as_ref())?;
        // SAFETY: a live model; path is NUL-terminated.
        check(unsafe { sys::cblob_model_to_proto_file(self.ptr(), i32::from(write_diff), path.as_ptr()) })
    }

    /// The blobs as safetensors bytes (keys `<layer>.<index>`, or PyTorch's names with
    /// [`ExportFlags::TorchNames`]; diffs with [`ExportFlags::Diff`]).
    pub fn to_safetensors(&self, flags: &[ExportFlags]) -> Result<Vec<u8>> {
        let raw = self::flags(flags, ExportFlags::raw);
        // SAFETY: as to_bytes.
        read_bytes(|buffer, size, out| unsafe { sys::cblob_model_to_safetensors(self.ptr(), raw, buffer, size, out) })
    }

    /// Writes [`Net::to_safetensors`]'s bytes to a file, atomically.
    pub fn save_safetensors(&self, path: impl AsRef<Path>, flags: &[ExportFlags]) -> Result<()> {
        let path = c_path(path.as_ref())?;
        // SAFETY: a live model; path is NUL-terminated.
        check(unsafe { sys::cblob_model_to_safetensors_file(self.ptr(), self::flags(flags, ExportFlags::raw), path.as_ptr()) })
    }

    /// The blobs as a NumPy `.npz` (keys `<layer>/<index>`; diffs with [`ExportFlags::Diff`]).
    pub fn to_npz(&self, flags: &[ExportFlags]) -> Result<Vec<u8>> {
        let raw = self::flags(flags, ExportFlags::raw);
        // SAFETY: as to_bytes.
        read_bytes(|buffer, size, out| unsafe { sys::cblob_model_to_npz(self.ptr(), raw, buffer, size, out) })
    }

    /// Writes [`Net::to_npz`]'s bytes to a file, atomically.
    pub fn save_npz(&self, path: impl AsRef<Path>, flags: &[ExportFlags]) -> Result<()> {
        let path = c_path(path.as_ref())?;
        // SAFETY: a live model; path is NUL-terminated.
        check(unsafe { sys::cblob_model_to_npz_file(self.ptr(), self::flags(flags, ExportFlags::raw), path.as_ptr()) })
    }

    /// The layers whose blobs [`ExportFlags::TorchNames`] cannot name.
    pub fn torch_unmapped(&self) -> Result<Vec<usize>> {
        // SAFETY (both calls): a live model; the array has room for count indices.
        let count = self.count(|out| unsafe { sys::cblob_model_torch_unmapped(self.ptr(), ptr::null_mut(), 0, out) })?;
        let mut layers = vec![0i64; count as usize];
        if count > 0 {
            self.count(|out| unsafe { sys::cblob_model_torch_unmapped(self.ptr(), layers.as_mut_ptr(), count, out) })?;
        }
        Ok(layers.into_iter().map(|l| l as usize).collect())
    }

    /// Copies each layer's blobs of `weights` into this net's layer of that name (by index; every
    /// shape checked first: one error lists every mismatch, and nothing changes then).
    pub fn replace_blobs(&mut self, weights: &Net) -> Result<()> {
        // SAFETY: two live models.
        check(unsafe { sys::cblob_model_replace_blobs(self.ptr(), weights.ptr()) })
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // SAFETY: the only hold on the model.
        unsafe { sys::cblob_model_destroy(self.ptr()) }
    }
}
