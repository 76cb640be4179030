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
	if err := os.WriteFile(prototxt, []byte("name: \"LeNet\"\nlayer {\n  name: \"data\"\n  type: \"Input\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := cblob.OpenFile(ctx, prototxt, 0, 0)
	e := wantStatus(t, err, cblob.StatusParse)
	if e.Function != "cblob_file_open" || !strings.Contains(e.Detail, "prototxt") || e.Message != e.Function+": "+e.Detail {
		t.Fatalf("function %q, detail %q, message %q", e.Function, e.Detail, e.Message)
	}
}

// bigBlob is a blob of a few MiB, so that a save reports progress more than twice.
func bigBlob(t *testing.T, ctx *cblob.Context, fill func(i int) float32) *cblob.Blob {
	t.Helper()
	values := make([]float32, 3*1024*1024)
	for i := range values {
		values[i] = fill(i)
	}
	return filled(t, ctx, values, 3, 1024, 1024)
}

func TestProgressIsReportedAndAStopCancelsTheSave(t *testing.T) {
	ctx := newContext(t)
	b := bigBlob(t, ctx, func(i int) float32 { return float32(i) })
	dir := t.TempDir()
	path := filepath.Join(dir, "b.npy")

	var calls [][2]int64
	if err := ctx.SetProgress(func(done, total int64) bool {
		calls = append(calls, [2]int64{done, total})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveNpy(path, cblob.PartData); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) <= 2 || calls[0] != [2]int64{0, info.Size()} || calls[len(calls)-1] != [2]int64{info.Size(), info.Size()} {
		t.Fatalf("progress calls %v for %d bytes", calls, info.Size())
	}
	saved := must[[]byte](t)(os.ReadFile(path))

	// A stop fails with StatusCancelled; the existing file keeps its bytes, a new one is not made.
	if err := ctx.SetProgress(func(done, total int64) bool { return done == 0 }); err != nil {
		t.Fatal(err)
	}
	other := bigBlob(t, ctx, func(int) float32 { return 7 })
	wantStatus(t, other.SaveNpy(path, cblob.PartData), cblob.StatusCancelled)
	if now := must[[]byte](t)(os.ReadFile(path)); !bytes.Equal(now, saved) {
		t.Fatal("the stopped save changed the file")
	}
	absent := filepath.Join(dir, "absent.npy")
	wantStatus(t, other.SaveNpy(absent, cblob.PartData), cblob.StatusCancelled)
	if _, err := os.Stat(absent); !os.IsNotExist(err) {
		t.Fatalf("the stopped save made its file: %v", err)
	}

	// A panic in the function is recovered, never unwinding through the library: it stops the call.
	if err := ctx.SetProgress(func(done, total int64) bool { panic("the function's own panic") }); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, other.SaveNpy(absent, cblob.PartData), cblob.StatusCancelled)
	if _, err := os.Stat(absent); !os.IsNotExist(err) {
		t.Fatalf("the stopped save made its file: %v", err)
	}

	// nil removes the function: the save goes through.
	if err := ctx.SetProgress(nil); err != nil {
		t.Fatal(err)
	}
	if err := other.SaveNpy(absent, cblob.PartData); err != nil {
		t.Fatal(err)
	}
}
