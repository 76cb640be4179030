// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// What the tests share: where the Caffe files are, and the expected answers of a model
// (*.layers.txt, an independent decoding of the file).

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// caffeDataDir is ../shared/data/caffe beside the checkout (CTest names it in
// CBLOB_CAFFE_DATA_DIR); go test runs in bindings/go.
func caffeDataDir() string {
	if dir := os.Getenv("CBLOB_CAFFE_DATA_DIR"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "..", "shared", "data", "caffe")
}

// samplesDir is the project's samples folder.
func samplesDir() string {
	return filepath.Join("..", "..", "samples")
}

type expectedBlob struct {
	shape      []int64
	count      int64
	first, sum float64
}

type expectedLayer struct {
	name, kind string
	blobs      []expectedBlob
}

// expectedLayers reads the net's name and layers from a *.layers.txt file.
func expectedLayers(t *testing.T, path string) (string, []expectedLayer) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	number := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return v
	}
	var name string
	var layers []expectedLayer
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.HasPrefix(line, "net name: "):
			name = strings.Trim(strings.TrimPrefix(line, "net name: "), "'")
		case len(line) > 0 && line[0] >= '0' && line[0] <= '9' && strings.Contains(line, " | "):
			// idx | name | type | bottoms -> tops | shape=[a,b] (n data(float32)); ...
			cells := strings.Split(line, " | ")
			layer := expectedLayer{name: cells[1], kind: cells[2]}
			for _, b := range strings.Split(cells[4], "; ") {
				if !strings.HasPrefix(b, "shape=[") {
					continue
				}
				blob := expectedBlob{count: 1}
				for _, d := range strings.Split(b[len("shape=["):strings.Index(b, "]")], ",") {
					dim := int64(number(d))
					blob.shape = append(blob.shape, dim)
					blob.count *= dim
				}
				layer.blobs = append(layer.blobs, blob)
			}
			layers = append(layers, layer)
		case strings.Contains(line, ".blobs[") && strings.Contains(line, ": n="):
			// conv1.blobs[0]: n=500 first=0.0483 sum=1.53 min=... max=...
			head, values, _ := strings.Cut(line, ": ")
			layerName, index, _ := strings.Cut(strings.TrimSuffix(head, "]"), ".blobs[")
			fields := map[string]float64{}
			for _, f := range strings.Fields(values) {
				key, value, _ := strings.Cut(f, "=")
				fields[key] = number(value)
			}
			for i := range layers {
				if layers[i].name == layerName {
					b := &layers[i].blobs[int(number(index))]
					if int64(fields["n"]) != b.count {
						t.Fatalf("%s: %s has %v values and %d elements", path, head, fields["n"], b.count)
					}
					b.first, b.sum = fields["first"], fields["sum"]
				}
			}
		}
	}
	return name, layers
}

// agree reports whether two sums of float32 values agree: the expected ones have 9
// significant digits.
func agree(actual, expected float64) bool {
	return math.Abs(actual-expected) <= 1e-6*math.Max(1, math.Abs(expected))
}
