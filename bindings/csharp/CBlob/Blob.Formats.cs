// SPDX-License-Identifier: BSD-2-Clause
using System;

namespace CBlob
{
    public sealed partial class Blob
    {
        // ---- Caffe's BlobProto ----------------------------------------------------------------
        // Reading checks everything before it creates or changes anything: malformed input throws
        // with Status.Parse and a message naming the field and byte offset. Writing always makes a
        // fresh message: float32 blobs write data, float64 and integer blobs double_data.

        /// <summary>
        /// Serializes the blob as a BlobProto (Caffe's ToProto into a fresh message): its shape, its
        /// data and, with writeDiff, its diff. A blob that never had a shape throws with
        /// <see cref="Status.State"/>.
        /// </summary>
        public byte[] ToProto(bool writeDiff = false)
        {
            using (var b = guard.Use())
            {
                IntPtr ptr = b;
                return Text.ReadBytes((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                    NativeMethods.cblob_blob_to_proto(ptr, writeDiff ? 1 : 0, buffer, size, out length));
            }
        }

        /// <summary>Writes the blob as a BlobProto file (a .binaryproto), replacing path atomically.</summary>
        public void SaveProto(string path, bool writeDiff = false)
        {
            byte[] cpath = Text.ToUtf8(Required(path, nameof(path)), "the path");
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_to_proto_file(b, writeDiff ? 1 : 0, cpath));
        }

        /// <summary>
        /// Loads a serialized BlobProto into this blob (Caffe's FromProto). With reshape the blob
        /// takes the BlobProto's shape; without, the shapes must be equal by Caffe's ShapeEquals
        /// (<see cref="Status.Shape"/> otherwise). Values are converted to the blob's dtype; the
        /// diff is loaded when the BlobProto has one. On failure the blob is unchanged.
        /// </summary>
        public void LoadProto(byte[] bytes, bool reshape = false)
        {
            Required(bytes, nameof(bytes));
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_from_proto(b, bytes, (UIntPtr)bytes.Length, reshape ? 1 : 0));
        }

        /// <summary>Loads a BlobProto file into this blob, as <see cref="LoadProto"/> does.</summary>
        public void LoadProtoFile(string path, bool reshape = false)
        {
            byte[] cpath = Text.ToUtf8(Required(path, nameof(path)), "the path");
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_from_proto_file(b, cpath, reshape ? 1 : 0));
        }

        /// <summary>
        /// Caffe's ShapeEquals: whether this blob's shape is the BlobProto's (legacy dims compare
        /// 1-padded, as Caffe does). Only the shape is read.
        /// </summary>
        public bool ShapeEqualsProto(byte[] bytes)
        {
            Required(bytes, nameof(bytes));
            int equal;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_shape_equals_proto(b, bytes, (UIntPtr)bytes.Length, out equal));
            return equal != 0;
        }

        /// <summary>
        /// A blob from a serialized BlobProto: float64 when it holds double_data, else float32, with
        /// its shape, data and diff.
        /// </summary>
        public static Blob FromProto(Context context, byte[] bytes)
        {
            Required(bytes, nameof(bytes));
            return CreatedIn(context, (IntPtr c, out BlobHandle h) =>
                NativeMethods.cblob_blob_create_from_proto(c, bytes, (UIntPtr)bytes.Length, out h));
        }

        /// <summary>A blob from a BlobProto file (a .binaryproto), as <see cref="FromProto"/> makes it.</summary>
        public static Blob FromProtoFile(Context context, string path)
        {
            byte[] cpath = Text.ToUtf8(Required(path, nameof(path)), "the path");
            return CreatedIn(context, (IntPtr c, out BlobHandle h) => NativeMethods.cblob_blob_create_from_proto_file(c, cpath, out h));
        }

        /// <summary>The argument, or ArgumentNullException.</summary>
        internal static T Required<T>(T value, string name) where T : class
        {
            if (value == null)
                throw new ArgumentNullException(name);
            return value;
        }
    }

    /// <summary>
    /// Caffe's BlobProtoVector, and telling the kinds of Caffe message apart. A blob's own
    /// BlobProto methods are on <see cref="Blob"/>; models are <see cref="Model"/>.
    /// </summary>
    public static class Proto
    {
        /// <summary>
        /// Which Caffe message the bytes hold (a net, a BlobProto or a BlobProtoVector), from their
        /// top-level fields; the reader of that kind checks the rest.
        /// </summary>
        public static ProtoKind Detect(byte[] bytes)
        {
            Blob.Required(bytes, nameof(bytes));
            ProtoKind kind;
            CBlobException.Check(NativeMethods.cblob_proto_detect(bytes, (UIntPtr)bytes.Length, out kind));
            return kind;
        }

        /// <summary>Like <see cref="Detect"/>, for a file (mapped, not read whole).</summary>
        public static ProtoKind DetectFile(string path)
        {
            byte[] cpath = Text.ToUtf8(Blob.Required(path, nameof(path)), "the path");
            ProtoKind kind;
            CBlobException.Check(NativeMethods.cblob_proto_detect_file(cpath, out kind));
            return kind;
        }

        /// <summary>Serializes blobs as a BlobProtoVector, each as <see cref="Blob.ToProto"/> writes it.</summary>
        public static byte[] VectorToBytes(Blob[] blobs, bool writeDiff = false)
        {
            using (var list = Guard.UseAll(Guards(blobs)))
            {
                IntPtr[] ptrs = list.Ptrs;
                return Text.ReadBytes((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                    NativeMethods.cblob_blob_vector_to_proto(ptrs, ptrs.Length, writeDiff ? 1 : 0, buffer, size, out length));
            }
        }

        /// <summary>Writes blobs as a BlobProtoVector file, replacing path atomically.</summary>
        public static void SaveVector(string path, Blob[] blobs, bool writeDiff = false)
        {
            byte[] cpath = Text.ToUtf8(Blob.Required(path, nameof(path)), "the path");
            using (var list = Guard.UseAll(Guards(blobs)))
                CBlobException.Check(NativeMethods.cblob_blob_vector_to_proto_file(list.Ptrs, list.Ptrs.Length, writeDiff ? 1 : 0, cpath));
        }

        /// <summary>
        /// Reads a serialized BlobProtoVector into new blobs, each made as <see cref="Blob.FromProto"/>
        /// makes it; the caller disposes them.
        /// </summary>
        public static Blob[] VectorFromBytes(Context context, byte[] bytes)
        {
            Blob.Required(bytes, nameof(bytes));
            return ReadVector(context, (IntPtr c, long max, IntPtr[] handles, out long count) =>
                NativeMethods.cblob_blob_vector_from_proto(c, bytes, (UIntPtr)bytes.Length, max, handles, out count));
        }

        /// <summary>Reads a BlobProtoVector file into new blobs.</summary>
        public static Blob[] VectorFromFile(Context context, string path)
        {
            byte[] cpath = Text.ToUtf8(Blob.Required(path, nameof(path)), "the path");
            return ReadVector(context, (IntPtr c, long max, IntPtr[] handles, out long count) =>
                NativeMethods.cblob_blob_vector_from_proto_file(c, cpath, max, handles, out count));
        }

        delegate Status VectorCall(IntPtr context, long max, IntPtr[] handles, out long count);

        /// <summary>Asks for the number of blobs, then reads them into owned handles.</summary>
        static Blob[] ReadVector(Context context, VectorCall call)
        {
            Blob.Required(context, nameof(context));
            IntPtr[] handles;
            long count;
            using (var c = context.Use())
            {
                CBlobException.Check(call(c, 0, null, out count));
                handles = new IntPtr[count];
                CBlobException.Check(call(c, handles.Length, handles, out count));
            }
            var blobs = new Blob[count];
            for (long i = 0; i < count; i++)
                blobs[i] = Blob.Adopt(handles[i]);
            return blobs;
        }

        internal static Guard[] Guards(Blob[] blobs)
        {
            Blob.Required(blobs, nameof(blobs));
            var guards = new Guard[blobs.Length];
            for (int i = 0; i < blobs.Length; i++)
                guards[i] = Blob.GuardOf(blobs[i], nameof(blobs) + "[" + i + "]");
            return guards;
        }
    }
}
