// SPDX-License-Identifier: BSD-2-Clause

// Command mpitworanks runs the collectives on two ranks: bindings/go/test.sh starts it under
// mpirun -np 2 (every rank runs it; a failed check exits non-zero, and mpirun with it). Each rank
// computes the serial reference of every collective from every rank's inputs, which it can make
// itself, and compares its result bit for bit: the results are then identical across ranks too.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"example.com/cblob"
)

// inputs are rank's values: exact in every dtype, distinct per rank, element and salt.
func inputs(rank, n, salt int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64((i*7+rank*1000+salt*31)%977-400) / 8
	}
	return v
}

func serialSum(size, n, salt int) []float64 {
	sum := make([]float64, n)
	for r := 0; r < size; r++ {
		for i, x := range inputs(r, n, salt) {
			sum[i] += x
		}
	}
	return sum
}

// must and check end the rank with a failure, which makes mpirun end the job.
func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func check(ok bool, what string) {
	if !ok {
		fmt.Fprintln(os.Stderr, "FAIL:", what)
		os.Exit(1)
	}
}

func float32s(ctx *cblob.Context, part cblob.Part, values []float64) *cblob.Blob {
	b, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, int64(len(values)))
	must(err)
	view, err := cblob.MutableView[float32](b, part)
	must(err)
	for i, v := range values {
		view[i] = float32(v)
	}
	return b
}

func sameFloat32s(b *cblob.Blob, part cblob.Part, want []float64, scale float32, what string) {
	got, err := cblob.View[float32](b, part)
	must(err)
	check(len(got) == len(want), what+": length")
	for i := range want {
		check(math.Float32bits(got[i]) == math.Float32bits(float32(want[i])*scale), fmt.Sprintf("%s: element %d is %v", what, i, got[i]))
	}
}

func main() {
	ctx, err := cblob.NewContext()
	must(err)
	comm, err := cblob.NewMPIWorldComm(ctx)
	must(err)
	run(ctx, comm)
	must(comm.Close())
	comm, err = cblob.NewMPIWorldComm(ctx)
	must(err)
	timeout(ctx, comm)
	must(comm.Close())
	must(cblob.FinalizeMPI()) // Go's exit runs no C exit handlers
}

// timeout: rank 1 stays away from a collective; rank 0 times out, and its communicator is
// broken. Last: MPI keeps the collective rank 1 never joined.
func timeout(ctx *cblob.Context, comm *cblob.Comm) {
	if rank, _ := comm.Rank(); rank == 1 {
		return
	}
	must(comm.SetTimeout(300 * time.Millisecond))
	b, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, 8)
	must(err)
	err = comm.Allreduce(cblob.PartData, cblob.ReduceOpSum, b)
	check(errors.Is(err, cblob.StatusTimeout), fmt.Sprintf("a collective nobody joins: %v", err))
	err = comm.Barrier()
	check(errors.Is(err, cblob.StatusComm), fmt.Sprintf("a broken communicator: %v", err))
	must(cblob.FinalizeMPI()) // before the communicator closes: MPI may still write into the blob
	fmt.Println("rank 0: a collective rank 1 never joins: StatusTimeout, then StatusComm: ok")
}

func run(ctx *cblob.Context, comm *cblob.Comm) {
	rank, _ := comm.Rank()
	size, _ := comm.Size()
	check(size == 2, "run under mpirun -np 2")
	must(comm.SetTimeout(time.Minute))

	// One blob: the sum; a float64 blob: the average.
	a := float32s(ctx, cblob.PartData, inputs(rank, 1000, 1))
	must(comm.Allreduce(cblob.PartData, cblob.ReduceOpSum, a))
	sameFloat32s(a, cblob.PartData, serialSum(size, 1000, 1), 1, "sum of one float32 blob")
	d, _ := cblob.NewBlob(ctx, cblob.DTypeFloat64, 333)
	dv, _ := cblob.MutableData[float64](d)
	copy(dv, inputs(rank, 333, 2))
	must(comm.Allreduce(cblob.PartData, cblob.ReduceOpAverage, d))
	dv, _ = cblob.Data[float64](d)
	for i, want := range serialSum(size, 333, 2) {
		check(math.Float64bits(dv[i]) == math.Float64bits(want*(1/float64(size))), "average of float64")
	}

	// A fused list of mixed dtypes in small buckets, on the diff.
	must(comm.SetBucketBytes(256))
	x, y, z := float32s(ctx, cblob.PartDiff, inputs(rank, 15, 3)), float32s(ctx, cblob.PartDiff, inputs(rank, 40, 4)), float32s(ctx, cblob.PartDiff, inputs(rank, 100, 6))
	k, _ := cblob.NewBlob(ctx, cblob.DTypeInt32, 7)
	kv, _ := cblob.MutableDiff[int32](k)
	for i, v := range inputs(rank, 7, 5) {
		kv[i] = int32(v * 8)
	}
	must(comm.Allreduce(cblob.PartDiff, cblob.ReduceOpSum, x, y, k, z))
	sameFloat32s(x, cblob.PartDiff, serialSum(size, 15, 3), 1, "fused x")
	sameFloat32s(y, cblob.PartDiff, serialSum(size, 40, 4), 1, "fused y")
	sameFloat32s(z, cblob.PartDiff, serialSum(size, 100, 6), 1, "fused z (alone)")
	kv, _ = cblob.Diff[int32](k)
	for i, v := range serialSum(size, 7, 5) {
		check(kv[i] == int32(v*8), "fused int32")
	}
	must(comm.SetBucketBytes(cblob.CommDefaultBucketBytes))

	// An arena of three blobs' diffs, averaged; then a member written afterwards.
	p, q, r := float32s(ctx, cblob.PartDiff, inputs(rank, 12, 7)), float32s(ctx, cblob.PartDiff, inputs(rank, 17, 8)), float32s(ctx, cblob.PartDiff, inputs(rank, 8, 9))
	grads, err := cblob.NewArena(cblob.PartDiff, 64, p, q, r)
	must(err)
	n, _ := grads.Count()
	check(n == 16+32+16, "64-byte slices")
	must(comm.Allreduce(cblob.PartDiff, cblob.ReduceOpAverage, grads))
	sameFloat32s(p, cblob.PartDiff, serialSum(size, 12, 7), 1/float32(size), "arena member p")
	sameFloat32s(q, cblob.PartDiff, serialSum(size, 17, 8), 1/float32(size), "arena member q")
	sameFloat32s(r, cblob.PartDiff, serialSum(size, 8, 9), 1/float32(size), "arena member r")
	must(q.Fill(cblob.PartDiff, float64(rank+1)))
	must(comm.Allreduce(cblob.PartDiff, cblob.ReduceOpSum, grads))
	qv, _ := cblob.Diff[float32](q)
	for _, v := range qv {
		check(v == 3, "member written after the arena")
	}

	// Broadcast from the last rank.
	root := size - 1
	b := float32s(ctx, cblob.PartData, inputs(rank, 50, 10))
	must(comm.Broadcast(cblob.PartData, root, b))
	sameFloat32s(b, cblob.PartData, inputs(root, 50, 10), 1, "broadcast")

	// Requests: waited, and closed without a wait (which waits).
	nb := float32s(ctx, cblob.PartData, inputs(rank, 4096, 11))
	request, err := comm.AllreduceStart(cblob.PartData, cblob.ReduceOpSum, nb)
	must(err)
	must(request.Wait())
	must(request.Wait())
	request.Close()
	sameFloat32s(nb, cblob.PartData, serialSum(size, 4096, 11), 1, "non-blocking sum")
	request, err = comm.BroadcastStart(cblob.PartData, 0, nb)
	must(err)
	request.Close()
	request, err = comm.BarrierStart()
	must(err)
	must(request.Wait())
	request.Close()
	must(comm.Barrier())
	fmt.Printf("rank %d: all-reduce, average, fused list, arena, broadcast, requests: ok\n", rank)
}
