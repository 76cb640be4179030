// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the package documentation of windows
// (their methods are generated).

package cblob

// #include <cblob/cblob.h>
import "C"

// NeoML's window blobs: a window views size rows of a parent's first axis from a position. It
// owns no memory and holds its parent (closing the parent's *Blob frees nothing while a window of
// it is open). A window is a *Blob: every method takes it. If the parent later gets new storage
// (a reshape past its capacity, Share, SetCPUData of another size), the window keeps viewing the
// old storage, detached, until it is positioned again (SetWindowPosition, ShiftWindow,
// SetWindowSize), which re-attaches it to the parent's current storage and shape. Slices over a
// window's memory follow the package's rules for host slices, with both the window and its
// parent counting as "the blob".
