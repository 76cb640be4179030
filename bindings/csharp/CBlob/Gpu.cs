// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): SetGpuData (a device buffer with a release
// Action the library calls on any thread) and the Gpu class's documentation.
using System;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace CBlob
{
    /// <summary>
    /// The GPU backend (CUDA): what the machine has, and the kernel cache. The library loads and
    /// works without a GPU; the calls that need one then throw <see cref="CBlobException"/> with
    /// the status that says why (<see cref="Status.NoDriver"/>, <see cref="Status.StubDriver"/>,
    /// <see cref="Status.NoDevice"/>, ...), which <see cref="CBlobException.IsNoGpu"/> recognises.
    /// Device pointers and CUDA streams are IntPtr values: device addresses or driver objects,
    /// never managed memory.
    /// </summary>
    public static partial class Gpu
    {

        // The release callback of SetGpuData: runs and frees the caller's Action. Kept in a static
        // field so that the native thunk the library calls outlives every blob.
        internal static readonly ReleaseFn RunRelease = RunReleaseAction;

        static void RunReleaseAction(IntPtr ptr, IntPtr userData)
        {
            GCHandle handle = GCHandle.FromIntPtr(userData);
            var release = (Action)handle.Target;
            handle.Free();
            try
            {
                release();
            }
            catch (Exception e)
            {
                // An exception must not unwind into the library's frames: it is rethrown on the
                // thread pool, where it is an unhandled exception like any other.
                var captured = ExceptionDispatchInfo.Capture(e);
                ThreadPool.QueueUserWorkItem(_ => captured.Throw());
            }
        }
    }

    public sealed partial class Blob
    {

        /// <summary>
        /// Makes a caller's device buffer the blob's device data (Caffe's set_gpu_data): the current
        /// copy is then on the device and cblob never frees the buffer. ptr must be memory of the
        /// context's device covering sizeBytes (the library checks with the driver), allocated until
        /// release runs. release, if not null, runs once when cblob lets go of the buffer (the blob
        /// is disposed or given another buffer), on whichever thread drops the last holder; an
        /// exception it throws is rethrown on the thread pool (an unhandled exception). On failure
        /// it never runs. The size rule and sharing are those of <see cref="SetCpuData{T}"/>.
        /// </summary>
        public void SetGpuData(IntPtr ptr, ulong sizeBytes, Action release = null)
        {
            GCHandle handle = release == null ? default(GCHandle) : GCHandle.Alloc(release);
            Status status;
            using (var b = guard.Use())
                status = NativeMethods.cblob_blob_set_gpu_data(b, ptr, (UIntPtr)sizeBytes,
                    release == null ? null : Gpu.RunRelease, release == null ? IntPtr.Zero : GCHandle.ToIntPtr(handle));
            if (status != Status.Ok)
            {
                // On failure the library never calls release.
                if (release != null)
                    handle.Free();
                throw CBlobException.Last(status);
            }
        }

    }
}
