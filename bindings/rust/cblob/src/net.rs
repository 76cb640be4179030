// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Net type and the reads of several
// calls into one Rust value (rules with their stages, a typed vector of a blob's values). Param
// specs are generated records (records_generated.rs).
//! Nets kept as their bytes: a `.caffemodel` opened whole, with its structure, saved byte for
//! byte, exported to safetensors or NumPy `.npz`, and changed by net surgery. The type and the
//! methods that read more than one call's worth (a layer's rules with their stages, a blob's
//! values as a typed vector) are here; the methods that are one library call each are generated
//! (generated.rs), and so are the param specs (records_generated.rs).
use std::ptr::{self, NonNull};

use crate::error::{check, text, Error, Result};
use crate::{sys, Part, Phase, RuleKind, Status};

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
pub struct Net {
    pub(crate) raw: NonNull<sys::cblob_model>,
}

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

impl Net {

    fn ptr(&self) -> *mut sys::cblob_model {
        self.raw.as_ptr()
    }

    fn count(&self, call: impl FnOnce(*mut i64) -> sys::cblob_status) -> Result<i64> {
        let mut count = 0i64;
        check(call(&mut count))?;
        Ok(count)
    }

    fn text_at(&self, call: impl FnOnce(*mut *const sys::c_char) -> sys::cblob_status) -> Result<Option<String>> {
        let mut value = ptr::null();
        check(call(&mut value))?;
        // SAFETY: NULL or a NUL-terminated string the model owns; copied at once.
        Ok((!value.is_null()).then(|| unsafe { text(value) }))
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
}

