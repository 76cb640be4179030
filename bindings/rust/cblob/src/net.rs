// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Net type, and read_blob, generic over
// the element type it checks against the blob's. A layer's rules and param specs are generated
// records (records_generated.rs), its other methods one call each (generated.rs).
//! Nets kept as their bytes: a `.caffemodel` opened whole, with its structure, saved byte for
//! byte, exported to safetensors or NumPy `.npz`, and changed by net surgery. The type and the
//! blob values read as a typed vector are here; the methods that are one library call each are
//! generated (generated.rs), and so are the rules and param specs (records_generated.rs).
use std::ptr::NonNull;

use crate::error::{check, Error, Result};
use crate::{sys, Part, Status};

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

impl Net {
    fn ptr(&self) -> *mut sys::cblob_model {
        self.raw.as_ptr()
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

