// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

import (
	"errors"
	"fmt"

	"example.com/cblob"
)

func Example() {
	ctx, err := cblob.NewContext()
	if err != nil {
		panic(err)
	}
	defer ctx.Close()
	blob, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, 2, 3)
	if err != nil {
		panic(err)
	}
	defer blob.Close()

	data, _ := cblob.MutableData[float32](blob)
	diff, _ := cblob.MutableDiff[float32](blob)
	for i := range data {
		data[i], diff[i] = 1, 0.25
	}
	if err := blob.Update(); err != nil { // data -= diff
		panic(err)
	}
	sum, _ := blob.Asum(cblob.PartData)
	shape, _ := blob.ShapeString()
	fmt.Println(shape, sum)
	// Output: 2 3 (6) 4.5
}

func ExampleError() {
	ctx, _ := cblob.NewContext()
	defer ctx.Close()
	_, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, 2, -3)
	var e *cblob.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, errors.Is(err, cblob.StatusShape))
		fmt.Println(e.Message)
	}
	// Output:
	// CBLOB_ERR_SHAPE true
	// cblob_blob_create: shape[1] is -3; dimensions cannot be negative
}

func ExampleOpenModelFile() {
	ctx, _ := cblob.NewContext()
	defer ctx.Close()
	model, err := cblob.OpenModelFile(ctx, "../../samples/tiny_lenet.caffemodel")
	if err != nil {
		panic(err)
	}
	defer model.Close()
	layer, _ := model.FindLayer("conv1")
	weights, _ := model.LayerBlob(layer, 0)
	defer weights.Close()
	shape, _ := weights.ShapeString()
	fmt.Println(shape)
	// Output: 4 1 3 3 (36)
}

func ExampleMap() {
	ctx, _ := cblob.NewContext()
	defer ctx.Close()
	blob, _ := cblob.NewBlob(ctx, cblob.DTypeInt32, 6)
	defer blob.Close()
	m, err := cblob.Map[int32](blob, cblob.PartData, 2, 3, cblob.AccessWrite)
	if err != nil {
		panic(err)
	}
	copy(m.Slice(), []int32{7, 8, 9})
	if err := m.Close(); err != nil { // the values reach the blob here
		panic(err)
	}
	values, _ := cblob.ToSlice[int32](blob, cblob.PartData)
	fmt.Println(values)
	// Output: [0 0 7 8 9 0]
}

func ExampleIsNoGPU() {
	ctx, _ := cblob.NewContext()
	defer ctx.Close()
	if err := ctx.SetMode(cblob.ModeGPU); cblob.IsNoGPU(err) {
		fmt.Println("no GPU here; staying on the CPU")
	}
}
