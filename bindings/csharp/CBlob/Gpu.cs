// SPDX-License-Identifier: BSD-2-Clause
using System;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace CBlob
{
    /// <summary>The versions of the GPU libraries found (see <see cref="Gpu.Versions"/>).</summary>
    public struct GpuVersions
    {
        /// <summary>The CUDA version the driver supports, as CUDA encodes it (13000 is 13.0); 0 without a driver.</summary>
        public int Driver;
        /// <summary>NVRTC's version; 0 when it could not be loaded.</summary>
        public int Nvrtc;
        /// <summary>cuBLAS's version; 0 when it could not be loaded.</summary>
        public int Cublas;
    }

    /// <summary>
    /// The GPU backend (CUDA): what the machine has, and the kernel cache. The library loads and
    /// works without a GPU; the calls that need one then throw <see cref="CBlobException"/> with
    /// the status that says why (<see cref="Status.NoDriver"/>, <see cref="Status.StubDriver"/>,
    /// <see cref="Status.NoDevice"/>, ...), which <see cref="CBlobException.IsNoGpu"/> recognises.
    /// Device pointers and CUDA streams are IntPtr values: device addresses or driver objects,
    /// never managed memory.
    /// </summary>
    public static class Gpu
    {
        /// <summary>
        /// Loads the GPU stack if it is not loaded yet and returns the number of CUDA devices, or
        /// throws with the status that says why the GPU cannot be used.
        /// </summary>
        public static int Probe()
        {
            int count;
            CBlobException.Check(NativeMethods.cblob_gpu_probe(out count));
            return count;
        }

        /// <summary>The versions of the GPU libraries found; never fails for want of a GPU.</summary>
        public static GpuVersions Versions
        {
            get
            {
                var v = new GpuVersions();
                CBlobException.Check(NativeMethods.cblob_gpu_versions(out v.Driver, out v.Nvrtc, out v.Cublas));
                return v;
            }
        }

        /// <summary>The name of a CUDA device, as the driver reports it.</summary>
        public static string DeviceName(int deviceIndex)
        {
            return Text.ReadText((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                NativeMethods.cblob_gpu_device_name(deviceIndex, buffer, size, out length));
        }

        /// <summary>
        /// A report of the GPU stack, one item per line (what <c>cblob info</c> prints); never
        /// fails for want of a GPU.
        /// </summary>
        public static string Report
        {
            get { return Text.ReadText(NativeMethods.cblob_gpu_report); }
        }

        /// <summary>
        /// Where compiled kernels are kept (CBLOB_KERNEL_CACHE, or memory after the cache folder
        /// turned out not to be writable).
        /// </summary>
        public static CacheMode KernelCacheMode
        {
            get
            {
                CacheMode mode;
                CBlobException.Check(NativeMethods.cblob_kernel_cache_mode(out mode));
                return mode;
            }
        }

        /// <summary>The kernel cache folder, whatever the mode ("" when none can be named).</summary>
        public static string KernelCacheDirectory
        {
            get { return Text.ReadText(NativeMethods.cblob_kernel_cache_dir); }
        }

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
        /// A read-only device pointer to data or diff (Caffe's gpu_data / gpu_diff), copying from the
        /// host when the current copy is there; zero for a blob with no elements. It stays valid as
        /// long as a host span would.
        /// </summary>
        public IntPtr GetGpuPointer(Part part = Part.Data)
        {
            IntPtr ptr;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_gpu_ptr(b, part, out ptr));
            return ptr;
        }

        /// <summary>
        /// A writable device pointer to data or diff (Caffe's mutable_gpu_data): syncs like
        /// <see cref="GetGpuPointer"/>, then marks the device copy current, so spans taken before are
        /// stale and the next host view copies back.
        /// </summary>
        public IntPtr GetMutableGpuPointer(Part part = Part.Data)
        {
            IntPtr ptr;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_mutable_gpu_ptr(b, part, out ptr));
            return ptr;
        }

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

        /// <summary>
        /// Starts copying data or diff to the device on the context's stream and marks it synced at
        /// once (Caffe's async_gpu_push); the host copy must be the current one
        /// (<see cref="Status.State"/> otherwise). Until the context's Synchronize returns, the host
        /// copy must not change and the device copy may only be used by work on the same stream.
        /// </summary>
        public void AsyncPush(Part part = Part.Data)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_async_push(b, part));
        }
    }
}
