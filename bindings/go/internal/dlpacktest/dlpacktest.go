// SPDX-License-Identifier: BSD-2-Clause
// Package dlpacktest holds what the DLPack tests need from C, which Go test files cannot use: a
// counting deleter put in front of a tensor's own, field changes, and tensors made in C memory.
// It is internal: only this module's tests import it.
package dlpacktest

/*
#cgo pkg-config: cblob
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <cblob/dlpack.h>

// The producer's deleter and the number of calls, per interposed tensor. An entry stays after
// the call, so that a second call is counted (and does not reach the producer's deleter twice);
// an address freed and reused by a later tensor gets a later entry, which lookups find first.
typedef struct {
    void *tensor;
    void (*versioned)(DLManagedTensorVersioned *);
    void (*legacy)(DLManagedTensor *);
    int count;
} entry;

enum { MAX_ENTRIES = 4096 };
static entry entries[MAX_ENTRIES];
static int used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int add(void *tensor, void (*versioned)(DLManagedTensorVersioned *), void (*legacy)(DLManagedTensor *)) {
    pthread_mutex_lock(&lock);
    int id = used < MAX_ENTRIES ? used++ : -1;
    if (id >= 0)
        entries[id] = (entry){tensor, versioned, legacy, 0};
    pthread_mutex_unlock(&lock);
    return id;
}

// Counts a call; returns the entry as it was before.
static entry counted(void *tensor) {
    entry e = {0};
    pthread_mutex_lock(&lock);
    for (int i = used - 1; i >= 0; --i) {
        if (entries[i].tensor == tensor) {
            e = entries[i];
            entries[i].count++;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (e.tensor == NULL)
        abort(); // a deleter call for a tensor never interposed
    return e;
}

static void counting_versioned(DLManagedTensorVersioned *t) {
    entry e = counted(t);
    if (e.count == 0 && e.versioned != NULL)
        e.versioned(t);
}

static void counting_legacy(DLManagedTensor *t) {
    entry e = counted(t);
    if (e.count == 0 && e.legacy != NULL)
        e.legacy(t);
}

static int count_versioned(DLManagedTensorVersioned *t) {
    int id = add(t, t->deleter, NULL);
    if (id >= 0)
        t->deleter = counting_versioned;
    return id;
}

static int count_legacy(DLManagedTensor *t) {
    int id = add(t, NULL, t->deleter);
    if (id >= 0)
        t->deleter = counting_legacy;
    return id;
}

static int deletes(int id) {
    pthread_mutex_lock(&lock);
    int n = entries[id].count;
    pthread_mutex_unlock(&lock);
    return n;
}

// A float64 tensor holding 0, 1, 2, ... in one allocation its deleter frees.
typedef struct {
    DLManagedTensorVersioned tensor;
    int64_t shape[8];
    double values[];
} owned;

static void free_owned(DLManagedTensorVersioned *t) { free(t); }

static DLManagedTensorVersioned *new_float64(int32_t ndim, const int64_t *shape) {
    int64_t count = 1;
    for (int32_t i = 0; i < ndim; ++i)
        count *= shape[i];
    if (ndim > 8 || count < 0)
        return NULL;
    owned *o = calloc(1, sizeof *o + (size_t)count * sizeof(double));
    if (o == NULL)
        return NULL;
    for (int32_t i = 0; i < ndim; ++i)
        o->shape[i] = shape[i];
    for (int64_t i = 0; i < count; ++i)
        o->values[i] = (double)i;
    o->tensor = (DLManagedTensorVersioned){
        .version = {1, 0},
        .deleter = free_owned,
        .dl_tensor = {.data = o->values, .device = {kDLCPU, 0}, .ndim = ndim,
                      .dtype = {kDLFloat, 64, 1}, .shape = o->shape},
    };
    return &o->tensor;
}
*/
import "C"

import (
	"unsafe"
)

// Counter counts the calls of a tensor's deleter.
type Counter struct{ id C.int }

// Deletes returns the number of calls so far.
func (c Counter) Deletes() int {
	return int(C.deletes(c.id))
}

// CountDeletes puts a counting deleter in front of a DLManagedTensorVersioned's deleter.
func CountDeletes(tensor unsafe.Pointer) Counter {
	id := C.count_versioned((*C.DLManagedTensorVersioned)(tensor))
	if id < 0 {
		panic("dlpacktest: too many interposed tensors")
	}
	return Counter{id}
}

// CountLegacyDeletes puts a counting deleter in front of a DLManagedTensor's deleter.
func CountLegacyDeletes(tensor unsafe.Pointer) Counter {
	id := C.count_legacy((*C.DLManagedTensor)(tensor))
	if id < 0 {
		panic("dlpacktest: too many interposed tensors")
	}
	return Counter{id}
}

// CallDeleter calls a DLManagedTensorVersioned's deleter, as a consumer does when done.
func CallDeleter(tensor unsafe.Pointer) {
	t := (*C.DLManagedTensorVersioned)(tensor)
	C.counting_versioned(t) // every tensor the tests hand over is interposed
}

// SetDType changes a DLManagedTensorVersioned's dtype.
func SetDType(tensor unsafe.Pointer, code, bits uint8, lanes uint16) {
	t := (*C.DLManagedTensorVersioned)(tensor)
	t.dl_tensor.dtype = C.DLDataType{code: C.uint8_t(code), bits: C.uint8_t(bits), lanes: C.uint16_t(lanes)}
}

// SetLegacyDType changes a DLManagedTensor's dtype.
func SetLegacyDType(tensor unsafe.Pointer, code, bits uint8, lanes uint16) {
	t := (*C.DLManagedTensor)(tensor)
	t.dl_tensor.dtype = C.DLDataType{code: C.uint8_t(code), bits: C.uint8_t(bits), lanes: C.uint16_t(lanes)}
}

// SetMajorVersion changes a DLManagedTensorVersioned's major version.
func SetMajorVersion(tensor unsafe.Pointer, major uint32) {
	(*C.DLManagedTensorVersioned)(tensor).version.major = C.uint32_t(major)
}

// NewFloat64 makes a float64 DLManagedTensorVersioned in C memory holding 0, 1, 2, ..., whose
// deleter frees it (and is counted).
func NewFloat64(shape ...int64) (unsafe.Pointer, Counter) {
	var dims *C.int64_t
	if len(shape) > 0 {
		dims = (*C.int64_t)(unsafe.Pointer(&shape[0]))
	}
	t := C.new_float64(C.int32_t(len(shape)), dims)
	if t == nil {
		panic("dlpacktest: no tensor")
	}
	return unsafe.Pointer(t), CountDeletes(unsafe.Pointer(t))
}
