// SPDX-License-Identifier: BSD-2-Clause
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
        readonly ContextHandle handle;
        readonly Guard guard;

        /// <summary>A new context in CPU mode.</summary>
        public Context()
        {
            Status status = NativeMethods.cblob_context_create(out handle);
            if (status != Status.Ok)
            {
                handle.Dispose();
                throw CBlobException.Last(status);
            }
            guard = new Guard(handle);
        }

        /// <summary>
        /// The native handle, for interop; it stays owned by this context (do not dispose it).
        /// </summary>
        public ContextHandle Handle { get { return handle; } }

        /// <summary>Starts a call with the context's handle.</summary>
        internal Use Use()
        {
            return guard.Use();
        }

        /// <summary>The guard of a context argument (ArgumentNullException for null).</summary>
        internal static Guard GuardOf(Context context, string name)
        {
            return Blob.Required(context, name).guard;
        }

        /// <summary>Whether <see cref="Dispose"/> has run.</summary>
        public bool IsDisposed { get { return guard.IsDisposed; } }

        /// <summary>Drops this object's hold on the context; calling it again does nothing.</summary>
        public void Dispose()
        {
            guard.Dispose();
        }
    }
}
