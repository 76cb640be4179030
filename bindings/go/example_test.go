package cblob_test

import (
	"errors"
	"fmt"

	"cblob"
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
