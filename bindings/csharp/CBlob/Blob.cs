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
    /// Dispose may race with calls on other threads: the handle is released after the last call
    /// in flight returns. Blobs that share memory (<see cref="Share"/>) count as one blob.
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
    public sealed class Blob : IDisposable
    {
        readonly BlobHandle handle;

        /// <summary>
        /// A blob of the given dtype and shape (Caffe's <c>Blob(shape)</c>); no dimensions make a
        /// scalar (count 1). Nothing is allocated until the first access.
        /// </summary>
        /// <exception cref="CBlobException">
        /// <see cref="Status.Shape"/> for a negative dimension or too many axes,
        /// <see cref="Status.Overflow"/> for a count whose byte size overflows.
        /// </exception>
        public Blob(Context context, DType dtype, params long[] shape)
            : this(Create(context, dtype, shape))
        {
        }

        Blob(BlobHandle handle)
        {
            this.handle = handle;
        }

        static BlobHandle Create(Context context, DType dtype, long[] shape)
        {
            if (context == null)
                throw new ArgumentNullException(nameof(context));
            shape = shape ?? new long[0];
            BlobHandle handle;
            return Created(NativeMethods.cblob_blob_create(context.Handle, dtype, shape.Length, shape, out handle), handle);
        }

        /// <summary>A 4-axis blob (num, channels, height, width), Caffe's <c>Blob(n, c, h, w)</c>.</summary>
        public static Blob CreateLegacy(Context context, DType dtype, long num, long channels, long height, long width)
        {
            if (context == null)
                throw new ArgumentNullException(nameof(context));
            BlobHandle handle;
            return new Blob(Created(NativeMethods.cblob_blob_create_legacy(context.Handle, dtype, num, channels, height, width, out handle), handle));
        }

        /// <summary>
        /// A blob with no axes, count 0 and no storage (Caffe's default-constructed Blob), to be
        /// shaped later with <see cref="Reshape"/>.
        /// </summary>
        public static Blob CreateEmpty(Context context, DType dtype)
        {
            if (context == null)
                throw new ArgumentNullException(nameof(context));
            BlobHandle handle;
            return new Blob(Created(NativeMethods.cblob_blob_create_empty(context.Handle, dtype, out handle), handle));
        }

        static BlobHandle Created(Status status, BlobHandle handle)
        {
            if (status == Status.Ok)
                return handle;
            handle.Dispose();
            throw CBlobException.Last(status);
        }

        /// <summary>The native handle, for interop; it stays owned by this blob.</summary>
        public BlobHandle Handle { get { return handle; } }

        /// <summary>Releases this object's hold on the blob; calling it again does nothing.</summary>
        public void Dispose()
        {
            handle.Dispose();
        }

        /// <summary>Whether <see cref="Dispose"/> has run.</summary>
        public bool IsDisposed { get { return handle.IsClosed; } }

        // ---- shape ------------------------------------------------------------------------

        /// <summary>The element type.</summary>
        public DType DType
        {
            get
            {
                DType value;
                CBlobException.Check(NativeMethods.cblob_blob_dtype(handle, out value));
                return value;
            }
        }

        /// <summary>The number of elements: the product of the dimensions (0 for an empty blob).</summary>
        public long Count
        {
            get
            {
                long value;
                Status status = NativeMethods.cblob_blob_count(handle, out value);
                if (status != Status.Ok)
                    throw CBlobException.Last(status);
                return value;
            }
        }

        /// <summary>The number of axes.</summary>
        public int NumAxes
        {
            get
            {
                int value;
                CBlobException.Check(NativeMethods.cblob_blob_num_axes(handle, out value));
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
                CBlobException.Check(NativeMethods.cblob_blob_shape(handle, dims.Length, dims, out n));
                Array.Resize(ref dims, n);
                return dims;
            }
        }

        /// <summary>The dimension of one axis; a negative axis counts from the end (-1 is the last).</summary>
        public long ShapeAt(int axis)
        {
            long value;
            CBlobException.Check(NativeMethods.cblob_blob_shape_at(handle, axis, out value));
            return value;
        }

        /// <summary>The product of the dimensions of axes [start, end); needs 0 &lt;= start &lt;= end &lt;= NumAxes.</summary>
        public long CountRange(int start, int end)
        {
            long value;
            CBlobException.Check(NativeMethods.cblob_blob_count_range(handle, start, end, out value));
            return value;
        }

        /// <summary>Maps an axis in [-NumAxes, NumAxes) to [0, NumAxes) (Caffe's CanonicalAxisIndex).</summary>
        public int CanonicalAxis(int axis)
        {
            int value;
            CBlobException.Check(NativeMethods.cblob_blob_canonical_axis(handle, axis, out value));
            return value;
        }

        /// <summary>
        /// Caffe's LegacyShape(index) for index in [-4, 4): the dimension, or 1 for an axis the
        /// blob does not have. Only for blobs of at most 4 axes.
        /// </summary>
        public long LegacyShape(int index)
        {
            long value;
            CBlobException.Check(NativeMethods.cblob_blob_legacy_shape(handle, index, out value));
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
                UIntPtr length;
                CBlobException.Check(NativeMethods.cblob_blob_shape_string(handle, null, UIntPtr.Zero, out length));
                byte[] buffer = new byte[(int)length + 1];
                CBlobException.Check(NativeMethods.cblob_blob_shape_string(handle, buffer, (UIntPtr)buffer.Length, out length));
                return System.Text.Encoding.UTF8.GetString(buffer, 0, (int)length);
            }
        }

        /// <summary>The number of elements the storage holds (at least the count).</summary>
        public long Capacity
        {
            get
            {
                long value;
                CBlobException.Check(NativeMethods.cblob_blob_capacity(handle, out value));
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
            CBlobException.Check(NativeMethods.cblob_blob_offset(handle, indices.Length, indices, out value));
            return value;
        }

        /// <summary>Caffe's offset(n, c, h, w), every index checked strictly; only for blobs of at most 4 axes.</summary>
        public long OffsetLegacy(long n, long c, long h, long w)
        {
            long value;
            CBlobException.Check(NativeMethods.cblob_blob_offset_legacy(handle, n, c, h, w, out value));
            return value;
        }

        /// <summary>
        /// Gives the blob a new shape. Storage (and contents) are replaced only when the new count
        /// exceeds the capacity. On failure nothing changes.
        /// </summary>
        public void Reshape(params long[] shape)
        {
            shape = shape ?? new long[0];
            CBlobException.Check(NativeMethods.cblob_blob_reshape(handle, shape.Length, shape));
        }

        /// <summary>Reshapes to 4 axes (num, channels, height, width).</summary>
        public void ReshapeLegacy(long num, long channels, long height, long width)
        {
            CBlobException.Check(NativeMethods.cblob_blob_reshape_legacy(handle, num, channels, height, width));
        }

        /// <summary>Reshapes to another blob's shape (of any dtype), Caffe's ReshapeLike.</summary>
        public void ReshapeLike(Blob other)
        {
            CBlobException.Check(NativeMethods.cblob_blob_reshape_like(handle, Checked(other).handle));
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
            CBlobException.Check(NativeMethods.cblob_blob_cpu_ptr(handle, part, out ptr));
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
            CBlobException.Check(NativeMethods.cblob_blob_mutable_cpu_ptr(handle, part, out ptr));
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
            CBlobException.Check(NativeMethods.cblob_blob_read_element(handle, part, indices.Length, indices, out value));
            return value;
        }

        /// <summary>Where the current copy of data or diff lives.</summary>
        public Head GetHead(Part part)
        {
            Head value;
            CBlobException.Check(NativeMethods.cblob_blob_head(handle, part, out value));
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
            Status status = NativeMethods.cblob_blob_set_cpu_data(handle, pin.AddrOfPinnedObject(), (UIntPtr)bytes, Unpin, GCHandle.ToIntPtr(pin));
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
            CBlobException.Check(NativeMethods.cblob_blob_share(handle, Checked(other).handle, part));
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
            CBlobException.Check(NativeMethods.cblob_blob_copy_from(handle, Checked(source).handle, part, reshape ? 1 : 0));
        }

        /// <summary>
        /// data = data - diff (Caffe's Update). Throws with <see cref="Status.State"/> for data
        /// never written or read, and <see cref="Status.NotImplemented"/> for integer blobs.
        /// </summary>
        public void Update()
        {
            CBlobException.Check(NativeMethods.cblob_blob_update(handle));
        }

        /// <summary>The sum of absolute values of data or diff (0 for memory never accessed).</summary>
        public double Asum(Part part = Part.Data)
        {
            double value;
            CBlobException.Check(NativeMethods.cblob_blob_asum(handle, part, out value));
            return value;
        }

        /// <summary>The sum of squares of data or diff (0 for memory never accessed).</summary>
        public double Sumsq(Part part = Part.Data)
        {
            double value;
            CBlobException.Check(NativeMethods.cblob_blob_sumsq(handle, part, out value));
            return value;
        }

        /// <summary>Multiplies data or diff by factor, where its current copy is.</summary>
        public void Scale(double factor, Part part = Part.Data)
        {
            CBlobException.Check(NativeMethods.cblob_blob_scale(handle, part, factor));
        }

        static Blob Checked(Blob blob)
        {
            if (blob == null)
                throw new ArgumentNullException(nameof(blob));
            return blob;
        }

        /// <summary>"Blob(Float32, 2 3 (6))", or "Blob(disposed)".</summary>
        public override string ToString()
        {
            return handle.IsClosed ? "Blob(disposed)" : "Blob(" + DType + ", " + ShapeString + ")";
        }
    }
}
