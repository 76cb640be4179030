// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// Arenas, and communicators in one process (a world of one rank: MPI's singleton start): bad
// input gives errors that change nothing. The collectives on two ranks are
// internal/mpitworanks, which test.sh runs under mpirun.

import (
	"errors"
	"os"
	"strings"
	"testing"

	"example.com/cblob"
)

func float32Blob(t *testing.T, ctx *cblob.Context, part cblob.Part, values ...float32) *cblob.Blob {
	t.Helper()
	b, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, int64(len(values)))
	if err != nil {
		t.Fatal(err)
	}
	view, err := cblob.MutableView[float32](b, part)
	if err != nil {
		t.Fatal(err)
	}
	copy(view, values)
	return b
}

// worldComm is a world of one rank, or a skip that says why libcblob_mpi is missing.
func worldComm(t *testing.T, ctx *cblob.Context) *cblob.Comm {
	t.Helper()
	if why := os.Getenv("CBLOB_MPI_MISSING"); why != "" {
		t.Skip("libcblob_mpi is not built: " + why)
	}
	comm, err := cblob.NewMPIWorldComm(ctx)
	if err != nil {
		if errors.Is(err, cblob.StatusState) && strings.Contains(err.Error(), "cannot load") {
			t.Skip(err.Error())
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { comm.Close() })
	return comm
}

// wantStatusFrom is wantStatus, with a message that names the C function.
func wantStatusFrom(t *testing.T, err error, status cblob.Status, function string) {
	t.Helper()
	if e := wantStatus(t, err, status); !strings.HasPrefix(e.Message, function) {
		t.Fatalf("%v: the message does not name %s", err, function)
	}
}

func TestArenaHoldsItsMembersValues(t *testing.T) {
	ctx := newContext(t)
	a := float32Blob(t, ctx, cblob.PartData, 0, 1, 2, 3, 4, 5)
	b := float32Blob(t, ctx, cblob.PartData, 9, 9, 9, 9, 9)
	arena, err := cblob.NewArena(cblob.PartData, 64, a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	if n, _ := arena.Count(); n != 32 {
		t.Fatalf("count %d, want two 64-byte slices (32)", n)
	}
	all, _ := cblob.Data[float32](arena)
	if all[5] != 5 || all[6] != 0 || all[16] != 9 || all[20] != 9 {
		t.Fatalf("arena %v", all)
	}
	mine, _ := cblob.MutableData[float32](a)
	mine[0] = 42 // a member writes its slice
	a.Close()
	b.Close() // the arena holds its members
	if all, _ = cblob.Data[float32](arena); all[0] != 42 {
		t.Fatalf("arena[0] = %v after the member's write", all[0])
	}
}

func TestArenaErrorsChangeNothing(t *testing.T) {
	ctx := newContext(t)
	_, err := cblob.NewArena(cblob.PartDiff, 64)
	wantStatusFrom(t, err, cblob.StatusInvalidArgument, "cblob_arena_create")
	a := float32Blob(t, ctx, cblob.PartDiff, 3, 3, 3)
	d, _ := cblob.NewBlob(ctx, cblob.DTypeFloat64, 3)
	defer a.Close()
	defer d.Close()
	_, err = cblob.NewArena(cblob.PartDiff, 64, a, d)
	wantStatusFrom(t, err, cblob.StatusDType, "cblob_arena_create")
	_, err = cblob.NewArena(cblob.Part(7), 64, a)
	wantStatusFrom(t, err, cblob.StatusInvalidArgument, "cblob_arena_create")
	if diff, _ := cblob.Diff[float32](a); diff[0] != 3 || diff[2] != 3 {
		t.Fatalf("diff %v after failed arenas", diff)
	}
}

func TestWorldOfOneRankRefusesBadCollectives(t *testing.T) {
	ctx := newContext(t)
	comm := worldComm(t, ctx)
	rank, _ := comm.Rank()
	size, _ := comm.Size()
	if rank != 0 || size != 1 {
		t.Fatalf("rank %d of %d", rank, size)
	}
	ints, _ := cblob.NewBlob(ctx, cblob.DTypeInt32, 4)
	defer ints.Close()
	ints.Fill(cblob.PartData, 1)
	wantStatusFrom(t, comm.Allreduce(cblob.PartData, cblob.ReduceOpAverage, ints), cblob.StatusDType, "cblob_comm_allreduce")
	wantStatusFrom(t, comm.Broadcast(cblob.PartData, 1, ints), cblob.StatusOutOfRange, "cblob_comm_broadcast")
	wantStatusFrom(t, comm.Allreduce(cblob.PartData, cblob.ReduceOpSum, ints, ints), cblob.StatusInvalidArgument, "cblob_comm_allreduce")
	wantStatusFrom(t, comm.SetBucketBytes(-1), cblob.StatusInvalidArgument, "cblob_comm_set_bucket_bytes")
	p := float32Blob(t, ctx, cblob.PartDiff, 1, 2, 3)
	arena, err := cblob.NewArena(cblob.PartDiff, 64, p)
	if err != nil {
		t.Fatal(err)
	}
	wantStatusFrom(t, comm.Allreduce(cblob.PartDiff, cblob.ReduceOpSum, arena, p), cblob.StatusInvalidArgument, "cblob_comm_allreduce")
	// Still usable; an empty list is a collective of nothing.
	for _, err := range []error{comm.Allreduce(cblob.PartData, cblob.ReduceOpSum, ints), comm.Allreduce(cblob.PartData, cblob.ReduceOpSum),
		comm.Allreduce(cblob.PartDiff, cblob.ReduceOpAverage, arena), comm.Barrier()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := cblob.Data[int32](ints); v[0] != 1 || v[3] != 1 {
		t.Fatalf("ints %v", v)
	}
	request, err := comm.AllreduceStart(cblob.PartDiff, cblob.ReduceOpSum, arena)
	if err != nil {
		t.Fatal(err)
	}
	if err := request.Wait(); err != nil {
		t.Fatal(err)
	}
	request.Close()
	if err := request.Wait(); !errors.Is(err, cblob.ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	comm.Close()
	if err := comm.Barrier(); !errors.Is(err, cblob.ErrClosed) {
		t.Fatalf("Barrier after Close: %v", err)
	}
}

func TestNCCLWithoutAGPUSaysWhy(t *testing.T) {
	if os.Getenv("CBLOB_BINDINGS_EXPECT_GPU") == "1" {
		t.Skip("a GPU (or its test double) is expected here")
	}
	_, err := cblob.NCCLUniqueID()
	if !cblob.IsNoGPU(err) && !errors.Is(err, cblob.StatusNcclMissing) {
		t.Fatalf("NCCLUniqueID without a GPU: %v", err)
	}
	ctx := newContext(t)
	_, err = cblob.NewNCCLComm(ctx, make([]byte, cblob.NcclUniqueIDBytes), 1, 0)
	if !cblob.IsNoGPU(err) && !errors.Is(err, cblob.StatusNcclMissing) {
		t.Fatalf("NewNCCLComm without a GPU: %v", err)
	}
	_, err = cblob.NewNCCLComm(ctx, []byte("short"), 1, 0)
	if !errors.Is(err, cblob.StatusInvalidArgument) {
		t.Fatalf("a short id: %v", err)
	}
}
