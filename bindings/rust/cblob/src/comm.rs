// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): arenas (the members count their views as
// the arena's memory), communicators over MPI (libcblob_mpi loaded at run time) and NCCL (a
// fixed-size id), and requests that borrow their blobs until they end.
//! Arenas and communicators: data-parallel training as Caffe did it on many GPUs, with the
//! diffs of every learnable blob all-reduced over the ranks after each backward pass.
//!
//! ```no_run
//! use cblob::{Blob, Comm, Context, DType, Part, ReduceOp};
//!
//! let ctx = Context::new()?;
//! let comm = Comm::mpi_world(&ctx)?; // under mpirun: every rank runs this
//! let mut w = Blob::new(&ctx, DType::Float32, &[64, 32])?;
//! let mut b = Blob::new(&ctx, DType::Float32, &[64])?;
//! comm.broadcast(&mut [&mut w, &mut b], Part::Data, 0)?; // rank 0's initial weights
//! let mut grads = Blob::arena(&mut [&mut w, &mut b], Part::Diff, 64)?;
//! // ... backward pass: w's and b's diffs, which live in the arena ...
//! comm.allreduce(&mut [&mut grads], Part::Diff, ReduceOp::Average)?;
//! # Ok::<(), cblob::Error>(())
//! ```
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::error::{check, text, Error, Result};
use crate::memory::{with_access, Access, Memory, ViewClaim};
use crate::{sys, Blob, Context, Part, ReduceOp, Status, NCCL_UNIQUE_ID_BYTES};

impl Blob {
    /// Lays out the `part` of `members` in one buffer, each in a slice aligned to `alignment`
    /// bytes (a power of two from the element size to 4096; 64 fits cache lines), and returns the
    /// arena: a 1-D blob whose `part` is that whole buffer (Caffe's learnable-params buffer). A
    /// collective on the arena moves every member at once.
    ///
    /// Each member's current values are copied into its slice and its `part` uses the slice from
    /// then on: members keep working as before. This crate counts views of a member's `part`
    /// and of the arena's as views of one memory, so a mutable view of either excludes every
    /// other. A member leaves the arena when it gets memory of its own (a reshape past its
    /// count, [`Blob::share`]); its slice keeps its last values. The arena and its members keep
    /// each other's memory alive: drop them in any order. Use the arena only in collectives and
    /// for reading. The members must have one dtype ([`Status::DType`]) and one context, be
    /// listed once and not be windows; none ([`Status::InvalidArgument`]) is an error.
    ///
    /// ```
    /// # use cblob::{Blob, Context, DType, Part};
    /// let ctx = Context::new()?;
    /// let mut a = Blob::new(&ctx, DType::Float32, &[3])?;
    /// let mut b = Blob::new(&ctx, DType::Float32, &[2])?;
    /// a.diff_mut::<f32>()?.fill(1.0);
    /// let arena = Blob::arena(&mut [&mut a, &mut b], Part::Diff, 64)?;
    /// assert_eq!(arena.count(), 32); // two 64-byte slices
    /// assert_eq!(&arena.diff::<f32>()?[..4], &[1.0, 1.0, 1.0, 0.0]);
    /// # Ok::<(), cblob::Error>(())
    /// ```
    pub fn arena(members: &mut [&mut Blob], part: Part, alignment: i64) -> Result<Blob> {
        let handles: Vec<*mut sys::cblob_blob> = members.iter().map(|b| b.as_ptr()).collect();
        let memories: Vec<Arc<Memory>> = members.iter().map(|b| Arc::clone(b.memory(part))).collect();
        let uses: Vec<(&Arc<Memory>, Access)> = memories.iter().map(|m| (m, Access::Write)).collect();
        let mut arena = with_access(&uses, || {
            // SAFETY: handles holds members.len() live blob handles, used by this thread alone (&mut).
            Blob::created(|out| unsafe { sys::cblob_arena_create(handles.as_ptr(), len(members.len()), part.raw(), alignment, out) })
        })?;
        let shared = Memory::new();
        for member in members.iter_mut() {
            member.set_memory(part, Arc::clone(&shared));
        }
        arena.set_memory(part, shared);
        Ok(arena)
    }
}

fn len(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A communicator: a group of ranks (processes, or GPUs) that run collectives together. Every
/// rank makes the same collectives in the same order, with lists of the same dtypes and counts.
///
/// Collectives take a list of blobs (one, many, or an arena from [`Blob::arena`]) and a part;
/// lists are fused into buckets ([`Comm::set_bucket_bytes`]) with bit-identical results. An
/// engine failure is [`Status::Comm`] and breaks the communicator (every later collective fails
/// at once: drop it); a wait past the timeout is [`Status::Timeout`]. Errors in the arguments
/// are found before anything starts and leave it usable.
///
/// `Send` but not `Sync`: a communicator and its requests are used from one thread at a time.
/// Dropping it frees it; requests still alive keep the library's communicator until they end.
pub struct Comm {
    pub(crate) raw: NonNull<sys::cblob_comm>,
}

// SAFETY: a communicator may move between threads; it and its requests are used by one thread at
// a time (not Sync, and a Request borrows it).
unsafe impl Send for Comm {}

impl Comm {
    /// A communicator over `MPI_COMM_WORLD` (under `mpirun`, its ranks; started alone, one rank),
    /// through `libcblob_mpi.so.1`, loaded at run time (`$CBLOB_MPI_LIBRARY` when set): libcblob
    /// never links MPI. MPI is initialised if nobody has, and then finalized when the process
    /// exits. Collective over the world. MPI's engine works on host memory (float32, float64,
    /// int32, uint32). [`Status::State`] when the library cannot be loaded or MPI is finalized,
    /// [`Status::Comm`] when MPI fails.
    pub fn mpi_world(context: &Context) -> Result<Comm> {
        let mpi = mpi_library()?;
        let mut raw = ptr::null_mut();
        // SAFETY: the function has this signature (include/cblob/mpi.h); both pointers are valid.
        let status = unsafe { (mpi.create_world)(context.as_ptr(), &mut raw) };
        if status != sys::CBLOB_OK {
            // SAFETY: never NULL, NUL-terminated, this thread's.
            return Err(Error::with_message(status, unsafe { text((mpi.last_error)()) }));
        }
        // SAFETY: the call succeeded: raw is a new communicator this value owns.
        unsafe { Comm::from_raw(raw) }
    }

    /// The unique id of a new NCCL communicator (`ncclGetUniqueId`): one rank makes it and sends
    /// it to the others by its own means; each then calls [`Comm::nccl`]. Without a GPU, the
    /// status that says why ([`Error::is_no_gpu`]); without NCCL, [`Status::NcclMissing`].
    pub fn nccl_unique_id() -> Result<[u8; NCCL_UNIQUE_ID_BYTES as usize]> {
        let mut id = [0u8; NCCL_UNIQUE_ID_BYTES as usize];
        // SAFETY: id has the room the call is told.
        check(unsafe { sys::cblob_comm_nccl_unique_id(id.as_mut_ptr(), id.len()) })?;
        Ok(id)
    }

    /// Joins the NCCL communicator of `nranks` ranks that `unique_id` names, as `rank`, on the
    /// context's GPU (one rank per GPU), blocking until every rank has joined. Collectives then
    /// run on device memory, queued on the context's stream. Errors as [`Comm::nccl_unique_id`].
    pub fn nccl(context: &Context, unique_id: &[u8; NCCL_UNIQUE_ID_BYTES as usize], nranks: i32, rank: i32) -> Result<Comm> {
        // SAFETY: unique_id holds the bytes the call reads; the out-pointer is valid.
        Comm::created(|out| unsafe { sys::cblob_comm_create_nccl(context.as_ptr(), unique_id.as_ptr(), nranks, rank, out) })
    }

    /// Takes ownership of a communicator made through [`crate::sys`] (`cblob_comm_create` over
    /// an engine of the caller's, or libcblob_mpi's `cblob_comm_create_mpi`).
    ///
    /// # Safety
    /// `raw` must be a live communicator that nothing else destroys or uses.
    pub unsafe fn from_raw(raw: *mut sys::cblob_comm) -> Result<Comm> {
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::InvalidArgument, "a NULL communicator"))?;
        Ok(Comm { raw })
    }

    /// How long a wait may take before it fails with [`Status::Timeout`] (and breaks the
    /// communicator); `None`, the default, waits as long as it takes. Set the same on every rank.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        let ms = timeout.map_or(-1, |t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
        // SAFETY: live handle.
        check(unsafe { sys::cblob_comm_set_timeout(self.as_ptr(), ms) })
    }

    /// Starts [`Comm::allreduce`] and returns its request, which holds the blobs (no view of
    /// their `part` until it ends, through them or a blob sharing their memory).
    pub fn allreduce_start<'a>(&'a self, blobs: &'a mut [&mut Blob], part: Part, op: ReduceOp) -> Result<Request<'a>> {
        self.start(blobs, part, |handles, n, out| unsafe {
            // SAFETY: as in allreduce; out is a valid out-pointer.
            sys::cblob_comm_allreduce_start(self.as_ptr(), handles, n, part.raw(), op.raw(), out)
        })
    }

    /// Starts [`Comm::broadcast`] and returns its request.
    pub fn broadcast_start<'a>(&'a self, blobs: &'a mut [&mut Blob], part: Part, root: i32) -> Result<Request<'a>> {
        self.start(blobs, part, |handles, n, out| unsafe {
            // SAFETY: as in allreduce.
            sys::cblob_comm_broadcast_start(self.as_ptr(), handles, n, part.raw(), root, out)
        })
    }

    /// Starts a barrier and returns its request.
    pub fn barrier_start(&self) -> Result<Request<'_>> {
        self.start(&mut [], Part::Data, |_, _, out| unsafe {
            // SAFETY: live handle, valid out-pointer.
            sys::cblob_comm_barrier_start(self.as_ptr(), out)
        })
    }

    fn start<'a>(
        &'a self,
        blobs: &'a mut [&mut Blob],
        part: Part,
        call: impl FnOnce(*const *mut sys::cblob_blob, i64, *mut *mut sys::cblob_comm_request) -> sys::cblob_status,
    ) -> Result<Request<'a>> {
        let handles: Vec<*mut sys::cblob_blob> = blobs.iter().map(|b| b.as_ptr()).collect();
        // A write claim on each memory until the request ends: no view of it meanwhile.
        let mut claims = Vec::new();
        for memory in distinct_memories(blobs, part) {
            claims.push(ViewClaim::acquire(&memory, Access::Write, || Ok(()))?.0);
        }
        let mut raw = ptr::null_mut();
        check(call(handles.as_ptr(), len(handles.len()), &mut raw))?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::Internal, "a started collective without a request"))?;
        Ok(Request { raw, _claims: claims, _borrows: PhantomData })
    }
}

/// Each memory once (an arena and its member share one: the library then says what is wrong).
fn distinct_memories(blobs: &[&mut Blob], part: Part) -> Vec<Arc<Memory>> {
    let mut memories: Vec<Arc<Memory>> = Vec::new();
    for blob in blobs {
        let memory = blob.memory(part);
        if !memories.iter().any(|m| Arc::ptr_eq(m, memory)) {
            memories.push(Arc::clone(memory));
        }
    }
    memories
}


impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Comm {{ rank: {}, size: {} }}", self.rank(), self.size())
    }
}

/// A collective in flight, from [`Comm::allreduce_start`] and friends. It borrows the
/// communicator and the blobs until it ends; [`Request::wait`] finishes it and returns the
/// collective's result. Dropping it without a wait waits too, and loses the result.
#[must_use = "a request is waited for by wait() (dropping it waits and loses the result)"]
pub struct Request<'a> {
    raw: NonNull<sys::cblob_comm_request>,
    _claims: Vec<ViewClaim>,
    _borrows: PhantomData<(&'a Comm, &'a mut Blob)>,
}

impl Request<'_> {
    /// Waits for the collective and returns how it went ([`Status::Comm`], [`Status::Timeout`]
    /// on failure); the blobs are free again afterwards.
    pub fn wait(self) -> Result<()> {
        // SAFETY: live request; dropping self frees it afterwards.
        check(unsafe { sys::cblob_comm_request_wait(self.raw.as_ptr()) })
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        // SAFETY: self owns the request; destroy waits first when nobody has.
        unsafe { sys::cblob_comm_request_destroy(self.raw.as_ptr()) }
    }
}

// ---- libcblob_mpi, loaded at run time ---------------------------------------------------------

struct MpiLibrary {
    create_world: unsafe extern "C" fn(*mut sys::cblob_context, *mut *mut sys::cblob_comm) -> sys::cblob_status,
    last_error: unsafe extern "C" fn() -> *const c_char,
    // MPI's own, through libcblob_mpi's dependencies (for finalize_mpi).
    initialized: unsafe extern "C" fn(*mut c_int) -> c_int,
    finalized: unsafe extern "C" fn(*mut c_int) -> c_int,
    finalize: unsafe extern "C" fn() -> c_int,
}

/// Finalizes MPI now, once every communicator over it is dropped. libcblob_mpi finalizes the MPI
/// that [`Comm::mpi_world`] initialised when the process exits; call this before dropping a
/// communicator after a failed collective whose missing rank may still join it (MPI may write
/// into the blobs' memory until it is finalized: `cblob/mpi.h`). Nothing happens when MPI was
/// never initialised, is finalized already, or libcblob_mpi was never loaded. MPI cannot be
/// initialised again afterwards ([`Comm::mpi_world`] is then [`Status::State`]).
pub fn finalize_mpi() -> Result<()> {
    let Some(Ok(mpi)) = MPI_LIBRARY.get() else { return Ok(()) };
    let (mut started, mut done) = (0, 0);
    // SAFETY: MPI's query functions take a valid out-pointer; MPI_Finalize runs once (checked).
    let code = unsafe {
        (mpi.initialized)(&mut started);
        (mpi.finalized)(&mut done);
        if started != 0 && done == 0 {
            (mpi.finalize)()
        } else {
            0
        }
    };
    if code != 0 {
        return Err(Error::new(Status::Comm, format!("MPI_Finalize failed (MPI error {code})")));
    }
    Ok(())
}

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}
const RTLD_NOW: c_int = 2;
const RTLD_GLOBAL: c_int = 0x100; // Open MPI's plugins look up libmpi's symbols

/// The file [`Comm::mpi_world`] loads: `$CBLOB_MPI_LIBRARY` when set, else `libcblob_mpi.so.1`
/// from the dynamic loader's search path.
pub fn mpi_library_path() -> String {
    std::env::var("CBLOB_MPI_LIBRARY").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "libcblob_mpi.so.1".into())
}

static MPI_LIBRARY: OnceLock<std::result::Result<MpiLibrary, String>> = OnceLock::new();

fn mpi_library() -> Result<&'static MpiLibrary> {
    MPI_LIBRARY.get_or_init(load_mpi_library).as_ref().map_err(|why| Error::new(Status::State, why.clone()))
}

fn load_mpi_library() -> std::result::Result<MpiLibrary, String> {
    let path = mpi_library_path();
    let name = CString::new(path.clone()).map_err(|_| format!("{path:?} holds a NUL byte"))?;
    // SAFETY: dlopen and dlsym take NUL-terminated strings; the library stays loaded for good.
    unsafe {
        let handle = dlopen(name.as_ptr(), RTLD_NOW | RTLD_GLOBAL);
        if handle.is_null() {
            return Err(format!("cannot load {path} ({}): install libcblob-mpi1, or set CBLOB_MPI_LIBRARY", dl_error()));
        }
        let symbol = |name: &CStr| {
            let address = dlsym(handle, name.as_ptr());
            if address.is_null() {
                Err(format!("{path} lacks {}: {}", name.to_string_lossy(), dl_error()))
            } else {
                Ok(address)
            }
        };
        Ok(MpiLibrary {
            create_world: std::mem::transmute::<*mut c_void, _>(symbol(c"cblob_comm_create_mpi_world")?),
            last_error: std::mem::transmute::<*mut c_void, _>(symbol(c"cblob_mpi_last_error_message")?),
            initialized: std::mem::transmute::<*mut c_void, _>(symbol(c"MPI_Initialized")?),
            finalized: std::mem::transmute::<*mut c_void, _>(symbol(c"MPI_Finalized")?),
            finalize: std::mem::transmute::<*mut c_void, _>(symbol(c"MPI_Finalize")?),
        })
    }
}

unsafe fn dl_error() -> String {
    text(dlerror())
}
