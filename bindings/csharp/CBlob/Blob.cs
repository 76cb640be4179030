// SPDX-License-Identifier: BSD-2-Clause
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
        readonly BlobHandle handle;
        readonly Guard guard;

        /// <summary>
        /// A blob of the given dtype and shape (Caffe's <c>Blob(shape)</c>); no dimensions make a
        /// scalar (count 1). Nothing is allocated until the first access.
        /// </summary>
        /// <exception cref="CBlobException">
        /// <see cref="Status.Shape"/> for a negative dimension or too many axes,
        /// <see cref="Status.Overflow"/> for a count whose byte size overflows.
        /// </exception>
        public Blob(Context context, DType dtype, params long[] shape)
            : this(NewHandleIn(context, (IntPtr c, out BlobHandle h) =>
                NativeMethods.cblob_blob_create(c, dtype, (shape ?? new long[0]).Length, shape ?? new long[0], out h)))
        {
        }

        Blob(BlobHandle handle)
        {
            this.handle = handle;
            guard = new Guard(handle);
        }

        /// <summary>A call that creates a blob into its out-parameter.</summary>
        internal delegate Status Creator(out BlobHandle created);

        /// <summary>The handle a creating call made, or the call's error.</summary>
        static BlobHandle NewHandle(Creator create)
        {
            BlobHandle created;
            Status status = create(out created);
            if (status != Status.Ok)
            {
                created.Dispose();
                throw CBlobException.Last(status);
            }
            return created;
        }

        /// <summary>A blob from a call that creates one, or the call's error.</summary>
        internal static Blob Created(Creator create)
        {
            return new Blob(NewHandle(create));
        }

        /// <summary>A call that creates a blob in a context.</summary>
        internal delegate Status CreatorIn(IntPtr context, out BlobHandle created);

        static BlobHandle NewHandleIn(Context context, CreatorIn create)
        {
            if (context == null)
                throw new ArgumentNullException(nameof(context));
            using (var c = context.Use())
            {
                IntPtr ptr = c;
                return NewHandle((out BlobHandle created) => create(ptr, out created));
            }
        }

        /// <summary>A blob from a call that creates one in a context, or the call's error.</summary>
        internal static Blob CreatedIn(Context context, CreatorIn create)
        {
            return new Blob(NewHandleIn(context, create));
        }

        /// <summary>A blob over a handle whose hold the caller gives up (one a call wrote into an array).</summary>
        internal static Blob Adopt(IntPtr owned)
        {
            return new Blob(new BlobHandle(owned));
        }

        /// <summary>A call that makes a new blob from another.</summary>
        internal delegate Status Deriver(IntPtr blob, out BlobHandle created);

        /// <summary>A blob made from this one by a call, or the call's error.</summary>
        internal Blob Derived(Deriver derive)
        {
            using (var b = guard.Use())
            {
                IntPtr ptr = b;
                return Created((out BlobHandle created) => derive(ptr, out created));
            }
        }

        /// <summary>A 4-axis blob (num, channels, height, width), Caffe's <c>Blob(n, c, h, w)</c>.</summary>
        public static Blob CreateLegacy(Context context, DType dtype, long num, long channels, long height, long width)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) => NativeMethods.cblob_blob_create_legacy(c, dtype, num, channels, height, width, out h));
        }

        /// <summary>
        /// A blob with no axes, count 0 and no storage (Caffe's default-constructed Blob), to be
        /// shaped later with <see cref="Reshape"/>.
        /// </summary>
        public static Blob CreateEmpty(Context context, DType dtype)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) => NativeMethods.cblob_blob_create_empty(c, dtype, out h));
        }

        /// <summary>
        /// The native handle, for interop; it stays owned by this blob (do not dispose it). Calls
        /// made through it are guarded only if they take the SafeHandle.
        /// </summary>
        public BlobHandle Handle { get { return handle; } }

        /// <summary>The guard of a blob argument (ArgumentNullException for null).</summary>
        internal static Guard GuardOf(Blob blob, string name)
        {
            if (blob == null)
                throw new ArgumentNullException(name);
            return blob.guard;
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

        /// <summary>Whether <see cref="Dispose"/> has run.</summary>
        public bool IsDisposed { get { return guard.IsDisposed; } }

        // ---- shape ------------------------------------------------------------------------

        /// <summary>The element type.</summary>
        public DType DType
        {
            get
            {
                DType value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_dtype(b, out value));
                return value;
            }
        }

        /// <summary>The number of elements: the product of the dimensions (0 for an empty blob).</summary>
        public long Count
        {
            get
            {
                long value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_count(b, out value));
                return value;
            }
        }

        /// <summary>The number of axes.</summary>
        public int NumAxes
        {
            get
            {
                int value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_num_axes(b, out value));
                return value;
            }
        }

        /// <summary>The dimensions (a new array each time).</summary>
        public long[] Shape
        {
            get
            {
                long[] dims = new long[Constants.MaxAxes];
                int n;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_shape(b, dims.Length, dims, out n));
                Array.Resize(ref dims, n);
                return dims;
            }
        }

        /// <summary>The dimension of one axis; a negative axis counts from the end (-1 is the last).</summary>
        public long ShapeAt(int axis)
        {
            long value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_shape_at(b, axis, out value));
            return value;
        }

        /// <summary>The product of the dimensions of axes [start, end); each bound is -NumAxes to NumAxes, a negative one counting from the end, and start must not come after end.</summary>
        public long CountRange(int start, int end)
        {
            long value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_count_range(b, start, end, out value));
            return value;
        }

        /// <summary>Maps an axis in [-NumAxes, NumAxes) to [0, NumAxes) (Caffe's CanonicalAxisIndex).</summary>
        public int CanonicalAxis(int axis)
        {
            int value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_canonical_axis(b, axis, out value));
            return value;
        }

        /// <summary>
        /// Caffe's LegacyShape(index) for index in [-4, 4): the dimension, or 1 for an axis the
        /// blob does not have. Only for blobs of at most 4 axes.
        /// </summary>
        public long LegacyShape(int index)
        {
            long value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_legacy_shape(b, index, out value));
            return value;
        }

        /// <summary>LegacyShape(0); only for blobs of at most 4 axes.</summary>
        public long Num { get { return LegacyShape(0); } }

        /// <summary>LegacyShape(1); only for blobs of at most 4 axes.</summary>
        public long Channels { get { return LegacyShape(1); } }

        /// <summary>LegacyShape(2); only for blobs of at most 4 axes.</summary>
        public long Height { get { return LegacyShape(2); } }

        /// <summary>LegacyShape(3); only for blobs of at most 4 axes.</summary>
        public long Width { get { return LegacyShape(3); } }

        /// <summary>Caffe's shape string, such as "2 3 4 5 (120)".</summary>
        public string ShapeString
        {
            get
            {
                using (var b = guard.Use())
                {
                    IntPtr ptr = b;
                    return Text.ReadText((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                        NativeMethods.cblob_blob_shape_string(ptr, buffer, size, out length));
                }
            }
        }

        /// <summary>The number of elements the storage holds (at least the count).</summary>
        public long Capacity
        {
            get
            {
                long value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_capacity(b, out value));
                return value;
            }
        }

        /// <summary>
        /// The row-major offset of the given leading indices (missing trailing ones count as 0);
        /// each must be in [0, ShapeAt(i)).
        /// </summary>
        public long Offset(params long[] indices)
        {
            indices = indices ?? new long[0];
            long value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_offset(b, indices.Length, indices, out value));
            return value;
        }

        /// <summary>Caffe's offset(n, c, h, w), every index checked strictly; only for blobs of at most 4 axes.</summary>
        public long OffsetLegacy(long n, long c, long h, long w)
        {
            long value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_offset_legacy(b, n, c, h, w, out value));
            return value;
        }

        /// <summary>
        /// Gives the blob a new shape. Storage (and contents) are replaced only when the new count
        /// exceeds the capacity. On failure nothing changes.
        /// </summary>
        public void Reshape(params long[] shape)
        {
            shape = shape ?? new long[0];
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_reshape(b, shape.Length, shape));
        }

        /// <summary>Reshapes to 4 axes (num, channels, height, width).</summary>
        public void ReshapeLegacy(long num, long channels, long height, long width)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_reshape_legacy(b, num, channels, height, width));
        }

        /// <summary>Reshapes to another blob's shape (of any dtype), Caffe's ReshapeLike.</summary>
        public void ReshapeLike(Blob other)
        {
            using (var b = guard.Use())
            using (var o = GuardOf(other, nameof(other)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_reshape_like(b, o));
        }

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
        /// Reads one element of data or diff, converted to double (exact for every dtype), at
        /// the given leading indices (Caffe's data_at / diff_at).
        /// </summary>
        public double ReadElement(Part part, params long[] indices)
        {
            indices = indices ?? new long[0];
            double value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_read_element(b, part, indices.Length, indices, out value));
            return value;
        }

        /// <summary>Where the current copy of data or diff lives.</summary>
        public Head GetHead(Part part)
        {
            Head value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_head(b, part, out value));
            return value;
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

        /// <summary>
        /// Makes this blob use other's data or diff memory (Caffe's ShareData / ShareDiff): both
        /// then see one memory, kept alive until its last holder lets go. Counts must be equal
        /// (shapes may differ) and dtypes the same.
        /// </summary>
        public void Share(Blob other, Part part)
        {
            using (var b = guard.Use())
            using (var o = GuardOf(other, nameof(other)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_share(b, o, part));
        }

        /// <summary><c>Share(other, Part.Data)</c>.</summary>
        public void ShareData(Blob other) { Share(other, Part.Data); }

        /// <summary><c>Share(other, Part.Diff)</c>.</summary>
        public void ShareDiff(Blob other) { Share(other, Part.Diff); }

        /// <summary>
        /// Copies source's data or diff into this blob (Caffe's CopyFrom). Shapes must be equal
        /// unless reshape is true, which reshapes this blob to source first.
        /// </summary>
        public void CopyFrom(Blob source, Part part = Part.Data, bool reshape = false)
        {
            using (var b = guard.Use())
            using (var s = GuardOf(source, nameof(source)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_copy_from(b, s, part, reshape ? 1 : 0));
        }

        /// <summary>
        /// data = data - diff (Caffe's Update). Throws with <see cref="Status.State"/> for data
        /// never written or read, and <see cref="Status.NotImplemented"/> for integer blobs.
        /// </summary>
        public void Update()
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_update(b));
        }

        /// <summary>The sum of absolute values of data or diff (0 for memory never accessed).</summary>
        public double Asum(Part part = Part.Data)
        {
            double value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_asum(b, part, out value));
            return value;
        }

        /// <summary>The sum of squares of data or diff (0 for memory never accessed).</summary>
        public double Sumsq(Part part = Part.Data)
        {
            double value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_sumsq(b, part, out value));
            return value;
        }

        /// <summary>Multiplies data or diff by factor, where its current copy is.</summary>
        public void Scale(double factor, Part part = Part.Data)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_scale(b, part, factor));
        }

        /// <summary>"Blob(Float32, 2 3 (6))", or "Blob(disposed)".</summary>
        public override string ToString()
        {
            return IsDisposed ? "Blob(disposed)" : "Blob(" + DType + ", " + ShapeString + ")";
        }
    }
}
