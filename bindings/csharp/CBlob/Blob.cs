// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Blob type's documentation, Dispose
// (which ends open mappings), host spans, and SetCpuData (a pinned array with a release
// callback).
using System;
using System.Runtime.InteropServices;

namespace CBlob
{
    /// <summary>
    /// Caffe's Blob: an N-d array (at most <see cref="Constants.MaxAxes"/> axes, C-contiguous)
    /// holding data and diff (the gradient), each allocated on first access, zero-filled, and
    /// moved between host and GPU only when an accessor needs it.
    /// </summary>
    /// <remarks>
    /// <para>
    /// Lifetime: the blob owns one hold on a native handle, released by <see cref="Dispose"/>
    /// (calling it again does nothing) or, as a backstop, by the handle's finalizer. Calls on a
    /// disposed blob throw <see cref="ObjectDisposedException"/>.
    /// </para>
    /// <para>
    /// Host views (<see cref="GetData{T}"/>, <see cref="GetMutableData{T}"/>, ...) are spans over
    /// the blob's native memory: no copy. A span stays valid until the blob is disposed (or
    /// finalized: keep the blob reachable, as a <c>using</c> block does, while you use the span),
    /// reshaped past its capacity, given another buffer, or made to share another blob's memory.
    /// Writes through a read-only view's memory are not seen as writes: use a mutable view, which
    /// marks the host copy current.
    /// </para>
    /// <para>
    /// Thread safety: distinct blobs may be used from different threads at once. One blob is
    /// used by one thread at a time, except for the pure getters (<see cref="Count"/>,
    /// <see cref="Shape"/>, <see cref="DType"/>, ...), which several threads may call at once.
    /// Blobs that share memory (<see cref="Share"/>), a window and its parent, and every Blob
    /// object holding one native blob (two <see cref="Model.GetLayerBlob"/> calls for the same
    /// blob, say) count as one blob.
    /// </para>
    /// <para>
    /// <see cref="Dispose"/> may race with calls on other threads: a call that starts after it
    /// throws <see cref="ObjectDisposedException"/>, and a call already in flight finishes on a
    /// live handle, which is released when the last such call returns. The one exception is a
    /// blob with mappings still open (<see cref="Map{T}"/>): Dispose ends them, which is a call on
    /// the blob and follows the rule above.
    /// </para>
    /// </remarks>
    /// <example>
    /// <code>
    /// using (var ctx = new Context())
    /// using (var blob = new Blob(ctx, DType.Float32, 2, 3))
    /// {
    ///     blob.GetMutableData&lt;float&gt;().Fill(1.0f);
    ///     blob.GetMutableDiff&lt;float&gt;().Fill(0.25f);
    ///     blob.Update();                  // data -= diff
    ///     double sum = blob.Asum();       // 4.5
    /// }
    /// </code>
    /// </example>
    public sealed partial class Blob : IDisposable
    {
        /// <summary>A blob over a handle whose hold the caller gives up (one a call wrote into an array).</summary>
        internal static Blob Adopt(IntPtr owned)
        {
            return new Blob(new BlobHandle(owned));
        }

        /// <summary>
        /// Ends the mappings made through this object that are still open (newest first; see
        /// <see cref="Map{T}"/>) and releases this object's hold on the blob; calling it again
        /// does nothing. A call in flight on another thread finishes first: the hold is released
        /// when it returns.
        /// </summary>
        /// <exception cref="CBlobException">
        /// When a mapping's end fails (a copy back to the device); the hold is released even then.
        /// </exception>
        public void Dispose()
        {
            try
            {
                EndMappings();
            }
            finally
            {
                guard.Dispose();
            }
        }

        // ---- shape ------------------------------------------------------------------------

        // ---- memory -----------------------------------------------------------------------

        /// <summary>
        /// A read-only span over data or diff in host memory (Caffe's cpu_data / cpu_diff): syncs
        /// from the GPU when the current copy is there. See the class remarks for its lifetime.
        /// </summary>
        /// <exception cref="CBlobException"><see cref="Status.DType"/> when T is not the blob's element type.</exception>
        public unsafe ReadOnlySpan<T> GetView<T>(Part part) where T : struct
        {
            int length = SpanLength<T>();
            IntPtr ptr;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_cpu_ptr(b, part, out ptr));
            return new ReadOnlySpan<T>((void*)ptr, length);
        }

        /// <summary>
        /// A writable span over data or diff in host memory (Caffe's mutable_cpu_data /
        /// mutable_cpu_diff): syncs like <see cref="GetView{T}"/>, then marks the host copy current.
        /// </summary>
        public unsafe Span<T> GetMutableView<T>(Part part) where T : struct
        {
            int length = SpanLength<T>();
            IntPtr ptr;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_mutable_cpu_ptr(b, part, out ptr));
            return new Span<T>((void*)ptr, length);
        }

        /// <summary><c>GetView&lt;T&gt;(Part.Data)</c>.</summary>
        public ReadOnlySpan<T> GetData<T>() where T : struct { return GetView<T>(Part.Data); }

        /// <summary><c>GetView&lt;T&gt;(Part.Diff)</c>.</summary>
        public ReadOnlySpan<T> GetDiff<T>() where T : struct { return GetView<T>(Part.Diff); }

        /// <summary><c>GetMutableView&lt;T&gt;(Part.Data)</c>.</summary>
        public Span<T> GetMutableData<T>() where T : struct { return GetMutableView<T>(Part.Data); }

        /// <summary><c>GetMutableView&lt;T&gt;(Part.Diff)</c>.</summary>
        public Span<T> GetMutableDiff<T>() where T : struct { return GetMutableView<T>(Part.Diff); }

        /// <summary>A copy of data or diff as an array.</summary>
        public T[] ToArray<T>(Part part = Part.Data) where T : struct
        {
            return GetView<T>(part).ToArray();
        }

        /// <summary>The element count, after checking that T is the blob's element type and that a span can hold them.</summary>
        int SpanLength<T>() where T : struct
        {
            CheckElement<T>();
            long count = Count;
            if (count > int.MaxValue)
                throw new CBlobException(Status.Overflow, "cblob (C#): " + count + " elements do not fit in a span; read them with ReadElement");
            return (int)count;
        }

        void CheckElement<T>() where T : struct
        {
            DType? wanted = Elements.DTypeOf<T>();
            DType dtype = DType;
            if (wanted != dtype)
                throw new CBlobException(Status.DType, "cblob (C#): the blob holds " + dtype + " elements, not " + typeof(T).Name);
        }

        /// <summary>
        /// Makes an array the blob's host data without copying (Caffe's set_cpu_data): the array
        /// is pinned and the blob reads and writes it in place until the blob is destroyed or
        /// given another buffer, when the pin is released. The array must hold at least Count
        /// elements of the blob's type. If the storage does not hold exactly Count elements
        /// (after a shrinking reshape), data and diff first get fresh storage, as in Caffe.
        /// Blobs sharing the data see the new buffer.
        /// </summary>
        public void SetCpuData<T>(T[] buffer) where T : struct
        {
            if (buffer == null)
                throw new ArgumentNullException(nameof(buffer));
            CheckElement<T>();
            GCHandle pin = GCHandle.Alloc(buffer, GCHandleType.Pinned);
            ulong bytes = (ulong)buffer.LongLength * (ulong)Marshal.SizeOf(typeof(T));
            Status status;
            using (var b = guard.Use())
                status = NativeMethods.cblob_blob_set_cpu_data(b, pin.AddrOfPinnedObject(), (UIntPtr)bytes, Unpin, GCHandle.ToIntPtr(pin));
            if (status != Status.Ok)
            {
                // On failure the library never calls the release callback.
                pin.Free();
                throw CBlobException.Last(status);
            }
        }

        // Kept in a static field so that the native thunk the library calls outlives every blob.
        static readonly ReleaseFn Unpin = ReleasePin;

        static void ReleasePin(IntPtr ptr, IntPtr userData)
        {
            GCHandle.FromIntPtr(userData).Free();
        }

        /// <summary><c>Share(other, Part.Data)</c>.</summary>
        public void ShareData(Blob other) { Share(other, Part.Data); }

        /// <summary><c>Share(other, Part.Diff)</c>.</summary>
        public void ShareDiff(Blob other) { Share(other, Part.Diff); }

        /// <summary>"Blob(Float32, 2 3 (6))", or "Blob(disposed)".</summary>
        public override string ToString()
        {
            return IsDisposed ? "Blob(disposed)" : "Blob(" + DType + ", " + ShapeString + ")";
        }
    }
}
