// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Error type and the helpers every call
// uses (status check, two-call buffers, strings and paths).
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::{sys, Status};

/// A failed cblob call: the status the C library returned and the message it recorded.
///
/// The message names the C function and says what was wrong, for example
/// `cblob_blob_create: shape[1] is -3; dimensions cannot be negative`; [`Error::function`] and
/// [`Error::detail`] are its two parts as the library keeps them (never cut out of the text). A
/// few errors come from this crate rather than the library (a view that would alias a live one, a
/// slice of the wrong element type); their messages start with `cblob (Rust):` and name no
/// function.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    code: sys::cblob_status,
    message: String,
    function: String,
    detail: String,
}

/// `Result<T, cblob::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The status. A status this crate does not know (one a newer library added) reads as
    /// [`Status::Internal`]; [`Error::code`] keeps the number.
    pub fn status(&self) -> Status {
        Status::from_raw(self.code).unwrap_or(Status::Internal)
    }

    /// The raw `cblob_status` value.
    pub fn code(&self) -> sys::cblob_status {
        self.code
    }

    /// What went wrong, as the library (or this crate) described it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The public C function whose call failed (`"cblob_model_open_file"`), however deep inside
    /// the library the failure was found; `""` for an error of this crate's own.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// What went wrong, without the function's name: the message is `"<function>: <detail>"`.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The C enumerator's name of the status (`"CBLOB_ERR_SHAPE"`).
    pub fn status_name(&self) -> String {
        // SAFETY: cblob_status_name accepts any value and returns a static, NUL-terminated string.
        unsafe { text(sys::cblob_status_name(self.code)) }
    }

    pub(crate) fn new(status: Status, message: impl Into<String>) -> Error {
        let detail = message.into();
        Error { code: status.raw(), message: format!("cblob (Rust): {detail}"), function: String::new(), detail }
    }

    /// An error of another library of cblob's (libcblob_mpi) with its own message.
    pub(crate) fn with_message(code: sys::cblob_status, message: String) -> Error {
        Error { code, detail: message.clone(), message, function: String::new() }
    }

    /// The calling thread's last cblob error. Rust threads are OS threads, so reading it right
    /// after the failed call on the same thread reads that call's message.
    #[cold]
    #[inline(never)]
    fn last(code: sys::cblob_status) -> Error {
        // SAFETY: the three never return NULL; their texts stay valid until this thread's next
        // failing call, and they are copied before anything else runs here.
        let (message, function, detail) = unsafe {
            (text(sys::cblob_last_error_message()), text(sys::cblob_last_error_function()), text(sys::cblob_last_error_detail()))
        };
        Error { code, message, function, detail }
    }
}

/// Ok for CBLOB_OK, otherwise the thread's error for `code`.
#[inline]
pub(crate) fn check(code: sys::cblob_status) -> Result<()> {
    if code == sys::CBLOB_OK {
        Ok(())
    } else {
        if code == sys::CBLOB_ERR_CANCELLED {
            // A progress callback that panicked stopped the call: its panic goes on from here.
            crate::progress::resume_callback_panic();
        }
        Err(Error::last(code))
    }
}

/// For calls that cannot fail on a live handle with valid pointers (the header lists only
/// CBLOB_ERR_INVALID_ARGUMENT for NULLs, which this crate never passes): a failure there is a
/// broken invariant, reported as a panic with the library's message rather than a `Result`
/// every caller would have to unwrap.
#[inline]
pub(crate) fn infallible(code: sys::cblob_status) {
    if code != sys::CBLOB_OK {
        broken(code)
    }
}

#[cold]
#[inline(never)]
fn broken(code: sys::cblob_status) -> ! {
    panic!("cblob: a call that cannot fail on a live handle failed: {}", Error::last(code))
}

/// Copies a NUL-terminated string from the library (replacing invalid UTF-8).
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string.
pub(crate) unsafe fn text(ptr: *const sys::c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        CStr::from_ptr(ptr).to_string_lossy().into_owned()
    }
}

/// Runs a call of the two-call convention (`buffer` NULL and `buffer_size` 0 ask for the length)
/// and returns what it wrote: `nul` says whether the text ends with a NUL the length leaves out.
/// Asks again while the result grows between the two calls (a log another thread writes to).
fn read_sized(nul: bool, mut call: impl FnMut(*mut u8, usize, &mut usize) -> sys::cblob_status) -> Result<Vec<u8>> {
    let mut length = 0usize;
    check(call(std::ptr::null_mut(), 0, &mut length))?;
    loop {
        let mut buffer = vec![0u8; length + usize::from(nul)];
        let code = call(buffer.as_mut_ptr(), buffer.len(), &mut length);
        if code == sys::CBLOB_ERR_OUT_OF_RANGE {
            check(call(std::ptr::null_mut(), 0, &mut length))?;
            continue;
        }
        check(code)?;
        buffer.truncate(length);
        return Ok(buffer);
    }
}

/// A string the library writes with the two-call convention (a report, a log, a name).
pub(crate) fn read_text(mut call: impl FnMut(*mut sys::c_char, usize, &mut usize) -> sys::cblob_status) -> Result<String> {
    let bytes = read_sized(true, |buffer, size, length| call(buffer.cast(), size, length))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Serialized bytes the library writes with the two-call convention.
pub(crate) fn read_bytes(call: impl FnMut(*mut u8, usize, &mut usize) -> sys::cblob_status) -> Result<Vec<u8>> {
    read_sized(false, call)
}

/// A NUL-terminated copy of a string argument; one with a NUL inside is refused (the library
/// would read only up to it).
pub(crate) fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::new(Status::InvalidArgument, format!("{what} {text:?} contains a NUL byte")))
}

/// A path as the library takes it: its bytes, NUL-terminated.
pub(crate) fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::new(Status::InvalidArgument, format!("the path {path:?} contains a NUL byte")))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.status_name())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("status", &self.status_name())
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for Error {}
