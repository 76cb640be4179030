// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the `proto` module's documentation; its
// functions are generated (generated.rs).
//! Caffe's BlobProto and BlobProtoVector (`.binaryproto` files), and telling the kinds of Caffe
//! message apart. A blob's own proto methods are on [`Blob`](crate::Blob); models are [`crate::Model`]. Every
//! function here is one library call, generated (generated.rs); this file keeps their module and
//! its documentation.
//!
//! Reading checks everything before it creates or changes anything: malformed input is
//! [`Status::Parse`](crate::Status::Parse) with a message naming the field and byte offset.
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
pub use crate::generated::proto::*;
