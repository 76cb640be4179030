// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// Files of any kind (File), the model a file lends, the .npy writers, ReplaceBlobsWith, and
// errors' Function and Detail.

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"example.com/cblob"
)

func TestFileLendsItsModelPastItsClose(t *testing.T) {
	ctx := newContext(t)
	sample := filepath.Join(samplesDir(), "tiny_lenet.caffemodel")
	if kind := must[cblob.FileKind](t)(cblob.DetectKind(sample)); kind != cblob.FileKindNet {
		t.Fatalf("DetectKind: %v", kind)
	}
	file := must[*cblob.File](t)(cblob.OpenFile(ctx, sample, 0, 0))
	if kind := must[cblob.FileKind](t)(file.Kind()); kind != cblob.FileKindNet {
		t.Fatalf("Kind: %v", kind)
	}
	_, err := file.NumBlobs()
	wantStatus(t, err, cblob.StatusState)
	model := must[*cblob.Model](t)(file.Model())
	other := must[*cblob.Model](t)(file.Model())
	other.Close() // a second lent model closed first frees nothing
	file.Close()
	if _, err := file.Kind(); err != cblob.ErrClosed {
		t.Fatalf("Kind after Close: %v", err)
	}
	runtime.GC() // the file's finalizer must not free what the model still uses
	if layer := must[cblob.Layer](t)(model.Layer(1)); layer.Name != "conv1" {
		t.Fatalf("layer 1: %+v", layer)
	}
	dir := t.TempDir()
	npz := filepath.Join(dir, "m.npz")
	if err := model.SaveNpz(npz, 0); err != nil {
		t.Fatal(err)
	}
	if n := must[int64](t)(model.SaveNpyFolder(filepath.Join(dir, "npy"), 0)); n == 0 {
		t.Fatal("no .npy file written")
	}
	model.Close()
	model.Close()
	if _, err := model.NumLayers(); err != cblob.ErrClosed {
		t.Fatalf("NumLayers after Close: %v", err)
	}
	for _, path := range []string{npz, filepath.Join(dir, "npy")} {
		weights := must[*cblob.File](t)(cblob.OpenFile(ctx, path, 0, 0))
		wm := must[*cblob.Model](t)(weights.Model())
		base := must[*cblob.Model](t)(cblob.OpenModelFile(ctx, sample))
		if kept := must[int64](t)(base.ReplaceBlobsWith(wm, cblob.ReplaceFlagsAll)); kept != 0 {
			t.Fatalf("%s: kept %d", path, kept)
		}
		base.Close()
		weights.Close()
		wm.Close()
	}
}

func TestNpyOfABlobAndAFileOfBlobs(t *testing.T) {
	ctx := newContext(t)
	b := newBlob(t, ctx, cblob.DTypeFloat32, 2, 3)
	if err := cblob.CopyIn(b, cblob.PartData, []float32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	npy := must[[]byte](t)(b.ToNpy(cblob.PartData))
	path := filepath.Join(t.TempDir(), "b.npy")
	if err := b.SaveNpy(path, cblob.PartData); err != nil {
		t.Fatal(err)
	}
	if written := must[[]byte](t)(os.ReadFile(path)); !bytes.Equal(written, npy) || !bytes.HasPrefix(npy, []byte("\x93NUMPY")) {
		t.Fatal("SaveNpy and ToNpy differ, or no .npy")
	}
	file := must[*cblob.File](t)(cblob.OpenFile(ctx, path, 0, cblob.DTypeFloat64))
	defer file.Close()
	if n := must[int64](t)(file.NumBlobs()); n != 1 {
		t.Fatalf("NumBlobs: %d", n)
	}
	read := must[*cblob.Blob](t)(file.Blob(0))
	defer read.Close()
	values := make([]float64, 6)
	if err := cblob.CopyOut(read, cblob.PartData, values); err != nil {
		t.Fatal(err)
	}
	if values[5] != 6 || must[cblob.DType](t)(read.DType()) != cblob.DTypeFloat64 {
		t.Fatalf("read back %v", values)
	}
	_, err := file.Model()
	wantStatus(t, err, cblob.StatusState)
	_, err = file.Blob(1)
	wantStatus(t, err, cblob.StatusOutOfRange)
}

func TestErrorsCarryTheFunctionAndTheDetail(t *testing.T) {
	ctx := newContext(t)
	prototxt := filepath.Join(t.TempDir(), "net.prototxt")
	if err := os.WriteFile(prototxt, []byte("name: \"LeNet\"\nlayer {\n  nme: \"data\"\n  type: \"Input\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := cblob.OpenFile(ctx, prototxt, 0, 0)
	e := wantStatus(t, err, cblob.StatusParse)
	if e.Function != "cblob_file_open" || !strings.Contains(e.Detail, "prototxt") || e.Message != e.Function+": "+e.Detail {
		t.Fatalf("function %q, detail %q, message %q", e.Function, e.Detail, e.Message)
	}
}
