// SPDX-License-Identifier: BSD-2-Clause
//! Helpers the generated methods (generated.rs) call: counts as the C ABI takes them, flags,
//! enum values the crate may not know, and the two-call convention for arrays. Written by hand
//! because each is one decision the generator's output reuses, not a method of the API.
use std::ptr;

use crate::error::{check, Error, Result};
use crate::{sys, Blob, Status};

/// A list length as an int32 count, saturated: the library rejects more than it takes before it
/// reads any.
#[inline]
pub(crate) fn len_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// A list length as an int64 count, saturated.
#[inline]
pub(crate) fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// The C bit set of a list of flags.
pub(crate) fn flag_bits<T: Copy>(list: &[T], raw: impl Fn(T) -> i32) -> i32 {
    list.iter().fold(0, |all, &flag| all | raw(flag))
}

/// An enum value the library returned, or an error for one this crate does not know (a newer
/// library's).
#[inline]
pub(crate) fn known<T>(value: Option<T>, raw: i32, what: &str) -> Result<T> {
    value.ok_or_else(|| Error::new(Status::Internal, format!("{what} {raw} is unknown to this crate (a newer library?)")))
}

/// The value of a call that cannot fail on a live handle (the header lists only
/// CBLOB_ERR_INVALID_ARGUMENT, which this crate never causes): a failure is a broken invariant,
/// reported as `error::infallible` reports it.
pub(crate) fn must<T>(result: Result<T>) -> T {
    result.unwrap_or_else(|e| panic!("cblob: a call that cannot fail on a live handle failed: {e}"))
}

/// An int64 array of the two-call convention: the count (NULL and 0), then the values.
pub(crate) fn read_array(mut call: impl FnMut(*mut i64, i64, &mut i64) -> sys::cblob_status) -> Result<Vec<i64>> {
    let mut count = 0i64;
    check(call(ptr::null_mut(), 0, &mut count))?;
    let mut values = vec![0i64; usize::try_from(count).unwrap_or(0)];
    if count > 0 {
        check(call(values.as_mut_ptr(), count, &mut count))?;
        values.truncate(usize::try_from(count).unwrap_or(0));
    }
    Ok(values)
}

/// New blobs of the two-call convention: the number, then the handles, each owned by a `Blob`.
pub(crate) fn read_created(mut call: impl FnMut(i64, *mut *mut sys::cblob_blob, &mut i64) -> sys::cblob_status) -> Result<Vec<Blob>> {
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
