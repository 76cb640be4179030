// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the view counters that keep blobs sharing
// memory from aliasing views.
//! Borrow tracking for memory that several blobs can share.
//!
//! After `b.share(&a, Part::Data)` two Rust blobs reach one C storage, so the borrow checker,
//! which sees two distinct objects, cannot stop a `&mut [T]` view of one from aliasing a `&[T]`
//! view of the other. Each blob therefore holds one `Memory` per part, and sharing makes both
//! blobs hold the same one. A `Memory` counts the views alive on it (like `RefCell`, but
//! thread-safe, since sharing blobs may live on different threads) and serialises the C calls
//! that touch the storage, whose head moves are not thread-safe in the library.
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::error::{Error, Result};
use crate::Status;

/// How a call or a view uses a memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Views alive on one storage: `n > 0` read views, `-1` one write view, `0` none.
#[derive(Default, Debug)]
pub(crate) struct Memory {
    views: Mutex<isize>,
}

impl Memory {
    pub(crate) fn new() -> Arc<Memory> {
        Arc::new(Memory::default())
    }

    fn lock(&self) -> MutexGuard<'_, isize> {
        // A panic while locked leaves the count consistent (it changes only after a C call
        // succeeds), so a poisoned lock is still good.
        self.views.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn admit(views: isize, access: Access) -> Result<()> {
    let free = match access {
        Access::Read => views >= 0,
        Access::Write => views == 0,
    };
    if free {
        return Ok(());
    }
    let held = match views {
        -1 => "a mutable view of it is".to_string(),
        1 => "a view of it is".to_string(),
        n => format!("{n} views of it are"),
    };
    Err(Error::new(
        Status::State,
        format!("memory in use: {held} still alive (through this blob or a blob sharing its memory)"),
    ))
}

/// Runs `f` (a C call) with every memory in `uses` locked and checked against its live views.
/// Locks are taken in address order, so two threads locking overlapping sets cannot deadlock; a
/// memory named twice is locked once, for the stronger access.
pub(crate) fn with_access<R>(uses: &[(&Arc<Memory>, Access)], f: impl FnOnce() -> Result<R>) -> Result<R> {
    let mut wanted: Vec<(&Memory, Access)> = Vec::with_capacity(uses.len());
    for &(memory, access) in uses {
        match wanted.iter_mut().find(|(m, _)| std::ptr::eq(*m, &**memory)) {
            Some((_, a)) if access == Access::Write => *a = Access::Write,
            Some(_) => {}
            None => wanted.push((&**memory, access)),
        }
    }
    wanted.sort_by_key(|(m, _)| *m as *const Memory as usize);
    let mut guards = Vec::with_capacity(wanted.len());
    for (memory, access) in wanted {
        let views = memory.lock();
        admit(*views, access)?;
        guards.push(views);
    }
    f()
}

/// `with_access` over memories the caller holds (owned `Arc`s): what a method that borrows its
/// blob mutably passes, since the call's closure needs that borrow.
pub(crate) fn with_owned_access<R>(uses: &[(Arc<Memory>, Access)], f: impl FnOnce() -> Result<R>) -> Result<R> {
    let borrowed: Vec<(&Arc<Memory>, Access)> = uses.iter().map(|(m, a)| (m, *a)).collect();
    with_access(&borrowed, f)
}

/// One live view's claim on a memory; dropping it ends the claim.
#[derive(Debug)]
pub(crate) struct ViewClaim {
    memory: Arc<Memory>,
    access: Access,
}

impl ViewClaim {
    /// Runs `f` (the C call that yields the view's pointer) under the memory's lock and, if it
    /// succeeds, records the view.
    pub(crate) fn acquire<R>(memory: &Arc<Memory>, access: Access, f: impl FnOnce() -> Result<R>) -> Result<(ViewClaim, R)> {
        let mut views = memory.lock();
        admit(*views, access)?;
        let value = f()?;
        *views = match access {
            Access::Read => *views + 1,
            Access::Write => -1,
        };
        Ok((ViewClaim { memory: Arc::clone(memory), access }, value))
    }
}

impl Drop for ViewClaim {
    fn drop(&mut self) {
        let mut views = self.memory.lock();
        *views = match self.access {
            Access::Read => *views - 1,
            Access::Write => 0,
        };
    }
}
