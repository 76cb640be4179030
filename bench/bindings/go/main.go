// SPDX-License-Identifier: BSD-2-Clause
// Times one cheap cblob call (Blob.Count through the Go package) against an empty C call, both
// from Go, and prints "RESULT go <empty ns> - <count ns>" (Go has no raw call to compare: the
// package's raw layer is its own unexported C wrappers).
package main

/*
#cgo LDFLAGS: -lbench_ffi
void bench_ffi_empty(void);
*/
import "C"

import (
	"fmt"
	"math"
	"os"
	"time"

	"cblob"
)

// bestNs is the best nanoseconds per call over batches of calls calls.
func bestNs(batches, calls int, f func()) float64 {
	best := math.Inf(1)
	for b := 0; b < batches; b++ {
		start := time.Now()
		for i := 0; i < calls; i++ {
			f()
		}
		best = math.Min(best, float64(time.Since(start).Nanoseconds())/float64(calls))
	}
	return best
}

func main() {
	rounds, batches, calls := 5, 10, 200000
	if len(os.Args) > 1 && os.Args[1] == "--quick" {
		rounds, batches, calls = 2, 3, 20000
	}
	ctx, err := cblob.NewContext()
	if err != nil {
		panic(err)
	}
	defer ctx.Close()
	blob, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, 2, 3, 4)
	if err != nil {
		panic(err)
	}
	defer blob.Close()
	var sink int64
	empty, count := math.Inf(1), math.Inf(1)
	// Alternating rounds, so that a noisy neighbour slows both sides alike.
	for r := 0; r < rounds; r++ {
		empty = math.Min(empty, bestNs(batches, calls, func() { C.bench_ffi_empty() }))
		count = math.Min(count, bestNs(batches, calls, func() {
			n, err := blob.Count()
			if err != nil {
				panic(err)
			}
			sink += n
		}))
	}
	if sink == 0 {
		panic("count returned 0")
	}
	fmt.Printf("RESULT go %.2f - %.2f\n", empty, count)
}
