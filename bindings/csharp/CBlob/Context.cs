using System;

namespace CBlob
{
    /// <summary>
    /// What Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and the device.
    /// Blobs keep their context alive inside the library, so disposing a context while blobs
    /// made in it live is fine.
    /// </summary>
    /// <remarks>
    /// Thread safety: <see cref="Mode"/> may be read from several threads at once; other use of
    /// one context (creating blobs in it, <see cref="SetMode"/>) needs one thread at a time.
    /// </remarks>
    public sealed class Context : IDisposable
    {
        readonly ContextHandle handle;

        /// <summary>A new context in CPU mode.</summary>
        public Context()
        {
            Status status = NativeMethods.cblob_context_create(out handle);
            if (status != Status.Ok)
            {
                handle.Dispose();
                throw CBlobException.Last(status);
            }
        }

        /// <summary>The native handle; it stays owned by this context.</summary>
        public ContextHandle Handle { get { return handle; } }

        /// <summary>Where copies and math run.</summary>
        public Mode Mode
        {
            get
            {
                Mode mode;
                CBlobException.Check(NativeMethods.cblob_context_mode(handle, out mode));
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
            CBlobException.Check(NativeMethods.cblob_context_set_mode(handle, mode));
        }

        /// <summary>Drops this object's hold on the context; calling it again does nothing.</summary>
        public void Dispose()
        {
            handle.Dispose();
        }
    }
}
