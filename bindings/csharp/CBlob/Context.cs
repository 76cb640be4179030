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
    public sealed class Context : IDisposable
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

        /// <summary>Where copies and math run.</summary>
        public Mode Mode
        {
            get
            {
                Mode mode;
                using (var c = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_context_mode(c, out mode));
                return mode;
            }
        }

        /// <summary>
        /// Sets the mode. <see cref="CBlob.Mode.Gpu"/> needs a working GPU: without one this throws
        /// with the status that says why (no driver, stub driver, no device, ...) and the mode
        /// stays as it was.
        /// </summary>
        public void SetMode(Mode mode)
        {
            using (var c = guard.Use())
                CBlobException.Check(NativeMethods.cblob_context_set_mode(c, mode));
        }

        /// <summary>The index of the context's CUDA device (0 unless set).</summary>
        public int Device
        {
            get
            {
                int device;
                using (var c = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_context_device(c, out device));
                return device;
            }
        }

        /// <summary>
        /// Chooses the CUDA device this context's blobs use (0 unless set) and opens it. A context
        /// keeps the device it opened: choosing another then throws with <see cref="Status.State"/>.
        /// </summary>
        public void SetDevice(int deviceIndex)
        {
            using (var c = guard.Use())
                CBlobException.Check(NativeMethods.cblob_context_set_device(c, deviceIndex));
        }

        /// <summary>The CUDA stream the context queues device work on (zero for the default stream).</summary>
        public IntPtr Stream
        {
            get
            {
                IntPtr stream;
                using (var c = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_context_stream(c, out stream));
                return stream;
            }
        }

        /// <summary>
        /// Queues the context's device work on a caller's CUDA stream (a CUstream or cudaStream_t
        /// of the context's device; zero is the default stream). cblob first waits for work queued
        /// on the previous stream. The stream must stay valid until another is set or the context
        /// and every blob made in it are gone.
        /// </summary>
        public void SetStream(IntPtr stream)
        {
            using (var c = guard.Use())
                CBlobException.Check(NativeMethods.cblob_context_set_stream(c, stream));
        }

        /// <summary>
        /// Waits until the device work this context queued (asynchronous pushes included) is done;
        /// returns at once for a context that never used a GPU.
        /// </summary>
        public void Synchronize()
        {
            using (var c = guard.Use())
                CBlobException.Check(NativeMethods.cblob_context_synchronize(c));
        }

        /// <summary>
        /// The context's log: warnings that were not errors of the call that met them (a kernel
        /// cache folder that cannot be written, say), one per line, oldest first.
        /// </summary>
        public string Log
        {
            get
            {
                using (var c = guard.Use())
                {
                    IntPtr ptr = c;
                    return Text.ReadText((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                        NativeMethods.cblob_context_log(ptr, buffer, size, out length));
                }
            }
        }

        /// <summary>Empties the context's log.</summary>
        public void ClearLog()
        {
            using (var c = guard.Use())
                CBlobException.Check(NativeMethods.cblob_context_clear_log(c));
        }

        /// <summary>
        /// Compiles every GPU kernel ahead of first use and returns how many kernel families were
        /// compiled now (the others were cached). With computeCapability 0, for this context's
        /// device (opening it); with one such as 80 or 90, for that architecture into the disk
        /// cache, with no GPU needed (only NVRTC).
        /// </summary>
        public int WarmUpKernels(int computeCapability)
        {
            int compiled;
            using (var c = guard.Use())
                CBlobException.Check(NativeMethods.cblob_kernel_cache_warm_up(c, computeCapability, out compiled));
            return compiled;
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
