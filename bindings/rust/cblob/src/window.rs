// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): windows borrow their parent, and count
// their views with it.
//! NeoML's window blobs.
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::error::Result;
use crate::{sys, Blob};

/// A blob that views `size` rows of a parent's first axis from a position (NeoML's window
/// blob); it derefs to [`Blob`], so every blob operation takes it.
///
/// A window owns no memory: it points into its parent's. The Rust binding makes that visible
/// to the borrow checker and to view tracking:
///
/// - A window borrows its parent (`&'p Blob`), so the parent cannot be reshaped, given a buffer
///   or made to share memory (all `&mut` calls) while a window of it lives. The parent's memory
///   therefore never changes under a window, and moving the window (which in the library
///   re-attaches it to the parent's current memory) never moves it to memory this crate does
///   not know about.
/// - A window joins its parent's view counters (the window and the parent count as one memory
///   for [`Blob::view_mut`] and writing calls), as blobs sharing memory do: a mutable view of a
///   window while a view of its parent lives fails with [`crate::Status::State`].
/// - Windows of windows borrow their parent window. Several windows of one parent may live at
///   once. A window is not `Send` (it holds `&Blob`, and `Blob` is not `Sync`).
///
/// ```
/// use cblob::{Blob, Context, DType, Part};
///
/// let ctx = Context::new()?;
/// let mut sequence = Blob::new(&ctx, DType::Float32, &[4, 3])?;
/// sequence.copy_in(Part::Data, &(0..12).map(|i| i as f32).collect::<Vec<_>>())?;
/// let mut step = sequence.window(1)?; // row 0
/// step.shift(2)?;                      // row 2
/// assert_eq!(step.to_vec::<f32>(Part::Data)?, [6.0, 7.0, 8.0]);
/// step.fill(Part::Data, -1.0)?;
/// drop(step);
/// assert_eq!(sequence.read_element(Part::Data, &[2, 1])?, -1.0);
/// # Ok::<(), cblob::Error>(())
/// ```
///
/// The parent cannot change while a window lives:
///
/// ```compile_fail,E0502
/// # let ctx = cblob::Context::new().unwrap();
/// let mut parent = cblob::Blob::new(&ctx, cblob::DType::Float32, &[4, 3]).unwrap();
/// let window = parent.window(2).unwrap();
/// parent.reshape(&[100, 3]).unwrap(); // error: cannot borrow `parent` as mutable
/// # drop(window);
/// ```
pub struct Window<'p> {
    blob: Blob,
    parent: &'p Blob,
}

impl Blob {
    /// A window of `size` rows over this blob's first axis, at row 0 (NeoML's
    /// `CreateWindowBlob`); its shape is this blob's with the first dimension set to `size`.
    pub fn window(&self, size: i64) -> Result<Window<'_>> {
        // SAFETY: a live handle; the window holds it (and its memory) inside the library.
        let mut blob = Blob::created(|out| unsafe { sys::cblob_window_create(self.as_ptr(), size, out) })?;
        blob.data = Arc::clone(&self.data);
        blob.diff = Arc::clone(&self.diff);
        Ok(Window { blob, parent: self })
    }
}

impl<'p> Window<'p> {
    /// The blob the window views.
    pub fn parent(&self) -> &'p Blob {
        self.parent
    }
}

impl Deref for Window<'_> {
    type Target = Blob;
    fn deref(&self) -> &Blob {
        &self.blob
    }
}

impl DerefMut for Window<'_> {
    fn deref_mut(&mut self) -> &mut Blob {
        &mut self.blob
    }
}

impl fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window").field("position", &self.position()).field("blob", &self.blob).finish()
    }
}
