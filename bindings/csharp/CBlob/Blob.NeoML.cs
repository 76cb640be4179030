// SPDX-License-Identifier: BSD-2-Clause
using System;
using System.Runtime.InteropServices;

namespace CBlob
{
    // NeoML's CDnnBlob operations: the named 7-axis layout, typed copies, clones and conversions,
    // transposes, merges and splits, fills and adds, windows. Each runs where the memory it works
    // on is current (host or device); the header's "NeoML blob operations" section has the rules,
    // the conversions and the overlap checks.
    public sealed partial class Blob
    {
        /// <summary>
        /// A 7-axis NeoML blob from up to 7 dimensions, left-aligned as NeoML's CreateTensor:
        /// dims[i] becomes axis i (BatchLength first) and the other axes are 1.
        /// </summary>
        public static Blob CreateTensor(Context context, DType dtype, params long[] dims)
        {
            dims = dims ?? new long[0];
            return CreatedIn(context, (IntPtr c, out BlobHandle h) => NativeMethods.cblob_blob_create_tensor(c, dtype, dims.Length, dims, out h));
        }

        /// <summary>NeoML's vector blob (size, 1, 1, 1, 1, 1, 1): the size is the BatchLength.</summary>
        public static Blob CreateVector(Context context, DType dtype, long size)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) => NativeMethods.cblob_blob_create_vector(c, dtype, size, out h));
        }

        /// <summary>NeoML's matrix blob (height, width, 1, 1, 1, 1, 1).</summary>
        public static Blob CreateMatrix(Context context, DType dtype, long height, long width)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) => NativeMethods.cblob_blob_create_matrix(c, dtype, height, width, out h));
        }

        /// <summary>(batchLength, batchWidth, 1, 1, 1, 1, channels), NeoML's CreateDataBlob.</summary>
        public static Blob CreateData(Context context, DType dtype, long batchLength, long batchWidth, long channels)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) =>
                NativeMethods.cblob_blob_create_data(c, dtype, batchLength, batchWidth, channels, out h));
        }

        /// <summary>(batchLength, batchWidth, listSize, 1, 1, 1, channels), NeoML's CreateListBlob.</summary>
        public static Blob CreateList(Context context, DType dtype, long batchLength, long batchWidth, long listSize, long channels)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) =>
                NativeMethods.cblob_blob_create_list(c, dtype, batchLength, batchWidth, listSize, channels, out h));
        }

        /// <summary>(batchLength, batchWidth, 1, height, width, 1, channels), NeoML's Create2DImageBlob.</summary>
        public static Blob CreateImage2D(Context context, DType dtype, long batchLength, long batchWidth, long height, long width, long channels)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) =>
                NativeMethods.cblob_blob_create_image2d(c, dtype, batchLength, batchWidth, height, width, channels, out h));
        }

        /// <summary>(batchLength, batchWidth, 1, height, width, depth, channels), NeoML's Create3DImageBlob.</summary>
        public static Blob CreateImage3D(Context context, DType dtype, long batchLength, long batchWidth, long height, long width, long depth, long channels)
        {
            return CreatedIn(context, (IntPtr c, out BlobHandle h) =>
                NativeMethods.cblob_blob_create_image3d(c, dtype, batchLength, batchWidth, height, width, depth, channels, out h));
        }

        /// <summary>
        /// A new blob with this one's shape and context and the given dtype (NeoML's
        /// CreateBlob(type, pattern)), zero-filled on first access; nothing is copied
        /// (<see cref="Clone"/> copies).
        /// </summary>
        public Blob CreateLike(DType dtype)
        {
            return Derived((IntPtr b, out BlobHandle h) => NativeMethods.cblob_blob_create_like(b, dtype, out h));
        }

        // ---- the named layout -----------------------------------------------------------------

        /// <summary>The size of a named axis; needs exactly 7 axes (<see cref="Status.Shape"/> otherwise).</summary>
        public long GetDim(Dim dim)
        {
            long value;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_dim(b, dim, out value));
            return value;
        }

        /// <summary>BatchLength * BatchWidth * ListSize of a 7-axis blob.</summary>
        public long ObjectCount
        {
            get
            {
                long value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_object_count(b, out value));
                return value;
            }
        }

        /// <summary>Height * Width * Depth * Channels of a 7-axis blob.</summary>
        public long ObjectSize
        {
            get
            {
                long value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_object_size(b, out value));
                return value;
            }
        }

        /// <summary>Height * Width * Depth of a 7-axis blob.</summary>
        public long GeometricalSize
        {
            get
            {
                long value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_geometrical_size(b, out value));
                return value;
            }
        }

        /// <summary>Whether both blobs have the same axes and dimensions (dtypes are not compared).</summary>
        public bool HasEqualShape(Blob other)
        {
            int equal;
            using (var b = guard.Use())
            using (var o = GuardOf(other, nameof(other)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_equal_shape(b, o, out equal));
            return equal != 0;
        }

        /// <summary>Whether both blobs have the same dimension on each listed axis (each must exist in both; a negative axis counts from each blob's end).</summary>
        public bool HasEqualDims(Blob other, params int[] axes)
        {
            axes = axes ?? new int[0];
            int equal;
            using (var b = guard.Use())
            using (var o = GuardOf(other, nameof(other)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_equal_dims(b, o, axes.Length, axes, out equal));
            return equal != 0;
        }

        /// <summary>
        /// Gives the blob another shape with the same count (NeoML's ReinterpretDimensions): memory
        /// and contents stay. Works on windows.
        /// </summary>
        public void Reinterpret(params long[] shape)
        {
            shape = shape ?? new long[0];
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_reinterpret(b, shape.Length, shape));
        }

        // ---- typed copies, clones and conversions -----------------------------------------------

        /// <summary>
        /// Copies values into data or diff (NeoML's CopyFrom(T*)); T must be the blob's element type
        /// and values must hold exactly <see cref="Count"/> elements.
        /// </summary>
        public void CopyIn<T>(T[] values, Part part = Part.Data) where T : struct
        {
            CopyArray(values, nameof(values), part, NativeMethods.cblob_blob_copy_in);
        }

        /// <summary>
        /// Copies data or diff into destination (NeoML's CopyTo), which must hold exactly
        /// <see cref="Count"/> elements of the blob's type.
        /// </summary>
        public void CopyOut<T>(T[] destination, Part part = Part.Data) where T : struct
        {
            CopyArray(destination, nameof(destination), part, NativeMethods.cblob_blob_copy_out);
        }

        delegate Status CopyCall(IntPtr blob, Part part, DType dtype, IntPtr array, long length);

        void CopyArray<T>(T[] array, string name, Part part, CopyCall call) where T : struct
        {
            Required(array, name);
            DType? dtype = Elements.DTypeOf<T>();
            if (dtype == null)
                throw new CBlobException(Status.DType, "cblob (C#): " + typeof(T).Name + " is no blob element type");
            GCHandle pin = GCHandle.Alloc(array, GCHandleType.Pinned);
            try
            {
                using (var b = guard.Use())
                    CBlobException.Check(call(b, part, dtype.Value, pin.AddrOfPinnedObject(), array.LongLength));
            }
            finally
            {
                pin.Free();
            }
        }

        /// <summary>
        /// Copies source's data or diff into this blob, converting values to its dtype (NeoML's
        /// CopyFrom(blob)); the shapes must be equal.
        /// </summary>
        public void ConvertFrom(Blob source, Part part = Part.Data)
        {
            using (var b = guard.Use())
            using (var s = GuardOf(source, nameof(source)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_convert_from(b, s, part));
        }

        /// <summary>
        /// ConvertFrom with NeoML's float-to-integer rule: the fraction is truncated toward zero
        /// (NeoML's VectorConvert), then saturated; NaN gives 0. Other pairs convert as ConvertFrom
        /// does. Since ABI 1.1.
        /// </summary>
        public void ConvertFromTruncating(Blob source, Part part = Part.Data)
        {
            using (var b = guard.Use())
            using (var s = GuardOf(source, nameof(source)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_convert_from_truncating(b, s, part));
        }

        /// <summary>A new, independent blob with this one's dtype, shape, data and diff (NeoML's GetCopy).</summary>
        public Blob DeepCopy()
        {
            return Derived(NativeMethods.cblob_blob_deep_copy);
        }

        /// <summary>A new, independent blob of the given dtype with this one's shape, and its data and diff converted.</summary>
        public Blob Clone(DType dtype)
        {
            return Derived((IntPtr b, out BlobHandle h) => NativeMethods.cblob_blob_clone(b, dtype, out h));
        }

        /// <summary>
        /// A new blob with axes axis1 and axis2 swapped, in shape, data and diff (NeoML's
        /// GetTransposed); a negative axis counts from the end.
        /// </summary>
        public Blob Transposed(int axis1, int axis2)
        {
            return Derived((IntPtr b, out BlobHandle h) => NativeMethods.cblob_blob_transposed(b, axis1, axis2, out h));
        }

        /// <summary>
        /// Writes source's data or diff with its axes axis1 and axis2 swapped into this blob (NeoML's
        /// TransposeFrom); this blob's shape must be source's with the two swapped.
        /// </summary>
        public void TransposeFrom(Blob source, Part part, int axis1, int axis2)
        {
            using (var b = guard.Use())
            using (var s = GuardOf(source, nameof(source)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_transpose_from(b, s, part, axis1, axis2));
        }

        // ---- merge and split ------------------------------------------------------------------

        /// <summary>
        /// Writes the concatenation of the inputs along axis into this blob (NeoML's MergeByDim).
        /// Every dimension is checked; inputs must not share memory with this blob.
        /// </summary>
        public void Merge(Part part, int axis, params Blob[] inputs)
        {
            using (var b = guard.Use())
            using (var list = Guard.UseAll(Proto.Guards(inputs)))
                CBlobException.Check(NativeMethods.cblob_blob_merge(b, part, axis, list.Ptrs.Length, list.Ptrs));
        }

        /// <summary>Cuts this blob along axis into the outputs, in order (NeoML's SplitByDim).</summary>
        public void Split(Part part, int axis, params Blob[] outputs)
        {
            using (var b = guard.Use())
            using (var list = Guard.UseAll(Proto.Guards(outputs)))
                CBlobException.Check(NativeMethods.cblob_blob_split(b, part, axis, list.Ptrs.Length, list.Ptrs));
        }

        /// <summary>Joins whole objects of 7-axis blobs (NeoML's MergeByObject).</summary>
        public void MergeObjects(Part part, params Blob[] inputs)
        {
            using (var b = guard.Use())
            using (var list = Guard.UseAll(Proto.Guards(inputs)))
                CBlobException.Check(NativeMethods.cblob_blob_merge_objects(b, part, list.Ptrs.Length, list.Ptrs));
        }

        /// <summary>Cuts each object of this 7-axis blob into the outputs' objects (NeoML's SplitByObject).</summary>
        public void SplitObjects(Part part, params Blob[] outputs)
        {
            using (var b = guard.Use())
            using (var list = Guard.UseAll(Proto.Guards(outputs)))
                CBlobException.Check(NativeMethods.cblob_blob_split_objects(b, part, list.Ptrs.Length, list.Ptrs));
        }

        // ---- fills and adds -------------------------------------------------------------------

        /// <summary>
        /// Sets every element of data or diff to value (NeoML's Fill). For an integer blob the value
        /// must be an integer (<see cref="Status.InvalidArgument"/> otherwise) in the dtype's range
        /// (<see cref="Status.Overflow"/> otherwise).
        /// </summary>
        public void Fill(double value, Part part = Part.Data)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_fill(b, part, value));
        }

        /// <summary>Sets one object of a 7-axis blob to value (NeoML's FillObject).</summary>
        public void FillObject(long index, double value, Part part = Part.Data)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_fill_object(b, part, index, value));
        }

        /// <summary>Sets data or diff to zero (NeoML's Clear).</summary>
        public void Clear(Part part = Part.Data)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_clear(b, part));
        }

        /// <summary>Sets one object of a 7-axis blob to zero (NeoML's ClearObject).</summary>
        public void ClearObject(long index, Part part = Part.Data)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_clear_object(b, part, index));
        }

        /// <summary>
        /// Adds source's data or diff to this blob's, element by element (NeoML's Add); dtypes and
        /// shapes must be equal, integers wrap, and a blob may be added to itself.
        /// </summary>
        public void Add(Blob source, Part part = Part.Data)
        {
            using (var b = guard.Use())
            using (var s = GuardOf(source, nameof(source)).Use())
                CBlobException.Check(NativeMethods.cblob_blob_add(b, s, part));
        }

        // ---- windows --------------------------------------------------------------------------
        // A window views size rows of a parent's first axis from a position. It owns no memory and
        // holds its parent (disposing the parent frees nothing while a window of it lives). If the
        // parent later gets new storage (a reshape past its capacity, Share, SetCpuData of another
        // size), the window keeps viewing the old storage, detached, until it is positioned again,
        // which re-attaches it to the parent's current storage and shape. Spans over a window's
        // memory follow the class's rules, with the window and its parent counting as the blob.

        /// <summary>
        /// A window of size rows over this blob's first axis, at row 0 (NeoML's CreateWindowBlob);
        /// its shape is this blob's with the first dimension set to size.
        /// </summary>
        public Blob CreateWindow(long size)
        {
            return Derived((IntPtr b, out BlobHandle h) => NativeMethods.cblob_window_create(b, size, out h));
        }

        /// <summary>Whether the blob is a window.</summary>
        public bool IsWindow
        {
            get
            {
                int value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_blob_is_window(b, out value));
                return value != 0;
            }
        }

        /// <summary>The window's first row in its parent (NeoML's GetParentPos).</summary>
        public long WindowPosition
        {
            get
            {
                long value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_window_position(b, out value));
                return value;
            }
        }

        /// <summary>The number of parent rows the window views.</summary>
        public long WindowSize
        {
            get
            {
                long value;
                using (var b = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_window_size(b, out value));
                return value;
            }
        }

        /// <summary>
        /// Moves the window to start at row position (NeoML's SetParentPos), which must be in
        /// [0, rows - size] (<see cref="Status.OutOfRange"/> otherwise, naming the bounds).
        /// </summary>
        public void SetWindowPosition(long position)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_window_set_position(b, position));
        }

        /// <summary>Moves the window by delta rows (NeoML's ShiftParentPos).</summary>
        public void ShiftWindow(long delta)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_window_shift(b, delta));
        }

        /// <summary>Makes the window size rows long at its current position.</summary>
        public void SetWindowSize(long size)
        {
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_window_set_size(b, size));
        }

        /// <summary>The blob the window views (NeoML's GetParent), as a new holder the caller disposes.</summary>
        public Blob GetWindowParent()
        {
            return Derived(NativeMethods.cblob_window_parent);
        }

        /// <summary>
        /// The first blob up the chain of parents that is not a window (NeoML's GetOwner), as a new
        /// holder the caller disposes.
        /// </summary>
        public Blob GetWindowOwner()
        {
            return Derived(NativeMethods.cblob_window_owner);
        }
    }
}
