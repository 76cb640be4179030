// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Context type's documentation; its
// constructor, one-call members and lifetime are generated.
using System;

namespace CBlob
{
    /// <summary>
    /// What Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and, with a GPU, the
    /// device and stream. Blobs keep their context alive inside the library, so disposing a
    /// context while blobs made in it live is fine.
    /// </summary>
    /// <remarks>
    /// Thread safety: <see cref="Mode"/>, <see cref="Device"/> and <see cref="Stream"/> may be
    /// read from several threads at once; other use of one context (creating blobs in it,
    /// <see cref="SetMode"/>, ...) needs one thread at a time. <see cref="Dispose"/> may race
    /// with calls on other threads: see <see cref="Blob"/>.
    /// </remarks>
    public sealed partial class Context : IDisposable
    {
    }
}
