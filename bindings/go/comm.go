// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): communicators over MPI (libcblob_mpi
// loaded at run time) and NCCL (a fixed-size id), and requests that hold their blobs until they
// end.

package cblob

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cblob/cblob.h>

// libcblob_mpi, loaded at run time (libcblob never links MPI): cblob_comm_create_mpi_world and
// its message, looked up once. RTLD_GLOBAL: Open MPI's plugins look up libmpi's symbols.
typedef cblob_status (*cbgo_mpi_world_fn)(cblob_context *, cblob_comm **);
typedef const char *(*cbgo_mpi_message_fn)(void);
static cbgo_mpi_world_fn cbgo_mpi_world_call;
static cbgo_mpi_message_fn cbgo_mpi_message_call;

static void *cbgo_mpi_library;

// Loads the library; NULL on success, else a message for the Go side to free.
static char *cbgo_mpi_open(const char *path) {
    void *library = cbgo_mpi_library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (library == NULL)
        return strdup(dlerror());
    cbgo_mpi_world_call = (cbgo_mpi_world_fn)dlsym(library, "cblob_comm_create_mpi_world");
    cbgo_mpi_message_call = (cbgo_mpi_message_fn)dlsym(library, "cblob_mpi_last_error_message");
    if (cbgo_mpi_world_call == NULL || cbgo_mpi_message_call == NULL)
        return strdup("it lacks cblob_comm_create_mpi_world or cblob_mpi_last_error_message");
    return NULL;
}

typedef struct { cblob_status status; char *message; cblob_comm *out_comm; } cbgo_mpi_world_result;

// The call and its message in one C call (the goroutine may change threads between two).
static cbgo_mpi_world_result cbgo_mpi_world(uintptr_t context) {
    cbgo_mpi_world_result r;
    memset(&r, 0, sizeof r);
    r.status = cbgo_mpi_world_call((cblob_context *)context, &r.out_comm);
    if (r.status != CBLOB_OK)
        r.message = strdup(cbgo_mpi_message_call());
    return r;
}

// MPI_Finalize, through libcblob_mpi's own MPI (dlsym searches its dependencies), unless MPI is
// finalized, was never initialised or libcblob_mpi was never loaded. Returns MPI's error code.
static int cbgo_mpi_finalize(void) {
    if (cbgo_mpi_library == NULL)
        return 0;
    int (*initialized)(int *) = (int (*)(int *))dlsym(cbgo_mpi_library, "MPI_Initialized");
    int (*finalized)(int *) = (int (*)(int *))dlsym(cbgo_mpi_library, "MPI_Finalized");
    int (*finalize)(void) = (int (*)(void))dlsym(cbgo_mpi_library, "MPI_Finalize");
    if (initialized == NULL || finalized == NULL || finalize == NULL)
        return -1;
    int started = 0, done = 0;
    initialized(&started);
    finalized(&done);
    return started && !done ? finalize() : 0;
}
*/
import "C"

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"
)

// Comm is a communicator: a group of ranks (processes, or GPUs) that run collectives together.
// Every rank makes the same collectives in the same order, with lists of the same dtypes and
// counts. Collectives take a part and blobs (one, many, or an arena from NewArena); lists are
// fused into buckets (SetBucketBytes) with bit-identical results.
//
// An engine failure is StatusComm and breaks the communicator (every later collective fails at
// once: Close it); a wait past the timeout is StatusTimeout. Errors in the arguments are found
// before anything starts and leave it usable. Use a Comm and its requests from one goroutine at a
// time. Close frees it (requests still open keep the library's communicator until they are
// closed); the garbage collector closes one that is forgotten.
type Comm struct {
	ptr *C.cblob_comm
}

var mpiLibrary struct {
	once sync.Once
	err  error
}

// MPILibraryPath is the file NewMPIWorldComm loads: $CBLOB_MPI_LIBRARY when set, else
// libcblob_mpi.so.1 from the dynamic loader's search path.
func MPILibraryPath() string {
	if path := os.Getenv("CBLOB_MPI_LIBRARY"); path != "" {
		return path
	}
	return "libcblob_mpi.so.1"
}

func loadMPILibrary() error {
	mpiLibrary.once.Do(func() {
		path := C.CString(MPILibraryPath())
		defer C.free(unsafe.Pointer(path))
		if message := C.cbgo_mpi_open(path); message != nil {
			why := C.GoString(message)
			C.free(unsafe.Pointer(message))
			mpiLibrary.err = bindingError(StatusState, "cannot load "+MPILibraryPath()+" ("+why+
				"): install libcblob-mpi1, or set CBLOB_MPI_LIBRARY")
		}
	})
	return mpiLibrary.err
}

// NewMPIWorldComm returns a communicator over MPI_COMM_WORLD (under mpirun, its ranks; started
// alone, one rank) through libcblob_mpi.so.1, loaded at run time (see MPILibraryPath): libcblob
// never links MPI. MPI is initialised (MPI_THREAD_MULTIPLE) if nobody has, and then finalized
// when the process exits. Collective over the world. MPI's engine works on host memory
// (float32, float64, int32, uint32). StatusState when the library cannot be loaded or MPI is
// finalized, StatusComm when MPI fails.
func NewMPIWorldComm(ctx *Context) (*Comm, error) {
	if err := loadMPILibrary(); err != nil {
		return nil, err
	}
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	r := C.cbgo_mpi_world(C.uintptr_t(uintptr(unsafe.Pointer(c))))
	runtime.KeepAlive(ctx)
	if r.status != C.CBLOB_OK {
		return nil, newMessageError(r.status, r.message)
	}
	return newComm(r.out_comm), nil
}

// FinalizeMPI finalizes MPI, once every communicator over it is closed: call it at the end of
// main (deferred) in a program that used NewMPIWorldComm. libcblob_mpi finalizes the MPI it
// initialised when the process exits through C's exit, but a Go program's exit skips C's exit
// handlers, and mpirun treats a rank that ends without MPI_Finalize as failed. Nothing happens
// when MPI was never initialised (or NewMPIWorldComm never loaded libcblob_mpi) or is finalized
// already; MPI cannot be initialised again afterwards (NewMPIWorldComm is then StatusState).
func FinalizeMPI() error {
	if code := C.cbgo_mpi_finalize(); code != 0 {
		return bindingError(StatusComm, "MPI_Finalize failed (MPI error "+strconv.Itoa(int(code))+")")
	}
	return nil
}

// NCCLUniqueID returns the unique id of a new NCCL communicator (ncclGetUniqueId): one rank
// makes it and sends it to the others by its own means; each then calls NewNCCLComm. Without a
// GPU, the status that says why (IsNoGPU); without NCCL, StatusNcclMissing.
func NCCLUniqueID() ([]byte, error) {
	id := make([]byte, NcclUniqueIDBytes)
	err := cCommNcclUniqueID((*C.uint8_t)(unsafe.Pointer(&id[0])), C.size_t(len(id)))
	if err != nil {
		return nil, err
	}
	return id, nil
}

// NewNCCLComm joins the NCCL communicator of nranks ranks that id names, as rank, on the
// context's GPU (one rank per GPU), blocking until every rank has joined. Collectives then run
// on device memory, queued on the context's stream. Errors as NCCLUniqueID; an id that is not
// NcclUniqueIDBytes long is StatusInvalidArgument.
func NewNCCLComm(ctx *Context, id []byte, nranks, rank int) (*Comm, error) {
	if len(id) != NcclUniqueIDBytes {
		return nil, bindingError(StatusInvalidArgument, "an NCCL unique id has 128 bytes")
	}
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := cCommCreateNccl(c, (*C.uint8_t)(unsafe.Pointer(&id[0])), C.int32_t(nranks), C.int32_t(rank))
	runtime.KeepAlive(ctx)
	runtime.KeepAlive(id)
	if err != nil {
		return nil, err
	}
	return newComm(ptr), nil
}

// SetTimeout sets how long a wait may take before it fails with StatusTimeout (and breaks the
// communicator), in whole milliseconds; a negative duration (the default) waits as long as it
// takes. Set the same on every rank.
func (c *Comm) SetTimeout(timeout time.Duration) error {
	ms := int64(-1)
	if timeout >= 0 {
		ms = timeout.Milliseconds()
	}
	return c.do(func(p *C.cblob_comm) error { return cCommSetTimeout(p, C.int64_t(ms)) })
}

// AllreduceStart starts Allreduce and returns its request. Until the request is waited for, the
// blobs must not be read, written, reshaped or used in another collective.
func (c *Comm) AllreduceStart(part Part, op ReduceOp, blobs ...*Blob) (*Request, error) {
	return c.start(blobs, func(p *C.cblob_comm, first **C.cblob_blob, n C.int64_t) (*C.cblob_comm_request, error) {
		return cCommAllreduceStart(p, first, n, C.cblob_part(part), C.cblob_reduce_op(op))
	})
}

// BroadcastStart starts Broadcast and returns its request.
func (c *Comm) BroadcastStart(part Part, root int, blobs ...*Blob) (*Request, error) {
	return c.start(blobs, func(p *C.cblob_comm, first **C.cblob_blob, n C.int64_t) (*C.cblob_comm_request, error) {
		return cCommBroadcastStart(p, first, n, C.cblob_part(part), C.int32_t(root))
	})
}

// BarrierStart starts a barrier and returns its request.
func (c *Comm) BarrierStart() (*Request, error) {
	return c.start(nil, func(p *C.cblob_comm, _ **C.cblob_blob, _ C.int64_t) (*C.cblob_comm_request, error) {
		return cCommBarrierStart(p)
	})
}

func (c *Comm) withBlobs(blobs []*Blob, call func(p *C.cblob_comm, first **C.cblob_blob, n C.int64_t) error) error {
	list, first, err := handles(blobs)
	if err != nil {
		return err
	}
	err = c.do(func(p *C.cblob_comm) error { return call(p, first, C.int64_t(len(list))) })
	runtime.KeepAlive(blobs)
	runtime.KeepAlive(list)
	return err
}

func (c *Comm) start(blobs []*Blob, call func(p *C.cblob_comm, first **C.cblob_blob, n C.int64_t) (*C.cblob_comm_request, error)) (*Request, error) {
	var request *C.cblob_comm_request
	err := c.withBlobs(blobs, func(p *C.cblob_comm, first **C.cblob_blob, n C.int64_t) error {
		var err error
		request, err = call(p, first, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	r := &Request{ptr: request, blobs: blobs}
	runtime.SetFinalizer(r, (*Request).release)
	return r, nil
}

// Request is a collective in flight (Comm.AllreduceStart and friends). Wait finishes it and
// returns the collective's error; Close (after Wait, or instead of it, which waits and loses the
// error) frees it; the garbage collector closes one that is forgotten.
type Request struct {
	ptr   *C.cblob_comm_request
	blobs []*Blob // the library holds the blobs; this keeps their Go values from finalizing early
}

// Wait waits for the collective and returns how it went (StatusComm, StatusTimeout on failure);
// waiting again returns the same and does nothing.
func (r *Request) Wait() error {
	if r == nil || r.ptr == nil {
		return ErrClosed
	}
	err := cCommRequestWait(r.ptr)
	runtime.KeepAlive(r)
	return err
}

// Close waits for the request if nobody has and frees it. Calling Close again does nothing.
func (r *Request) Close() error {
	if r != nil {
		r.release()
		runtime.SetFinalizer(r, nil)
	}
	return nil
}

func (r *Request) release() {
	if r.ptr != nil {
		cCommRequestDestroy(r.ptr)
		r.ptr = nil
		r.blobs = nil
	}
}
