// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): argument checks and the adoption of the
// blobs a BlobProtoVector read makes.
using System;

namespace CBlob
{
    public sealed partial class Blob
    {
        // ---- Caffe's BlobProto ----------------------------------------------------------------
        // Reading checks everything before it creates or changes anything: malformed input throws
        // with Status.Parse and a message naming the field and byte offset. Writing always makes a
        // fresh message: float32 blobs write data, float64 and integer blobs double_data.

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
    public static partial class Proto
    {

        internal delegate Status VectorCall(IntPtr context, long max, IntPtr[] handles, out long count);

        /// <summary>Asks for the number of blobs, then reads them into owned handles.</summary>
        internal static Blob[] ReadVector(Context context, VectorCall call)
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
