// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the read of a blob's values into an
// array of its dtype's element type, which C# can only pick at run time.
using System;
using System.Runtime.InteropServices;

namespace CBlob
{
    // A model opened from a file keeps every field of it and saves byte for byte what it read,
    // changed blobs' values aside. The members that read a layer's structure (rules and param
    // specs included), export the blobs as safetensors or NumPy .npz, read those back, and
    // replace blobs (net surgery) are generated (Safe.g.cs).
    public sealed partial class Model
    {
        /// <summary>
        /// A copy of a blob's data or diff without making its handle: a float[], double[], int[]
        /// or uint[] by its dtype.
        /// </summary>
        public Array ReadBlob(int layer, int index, Part part = Part.Data)
        {
            long count = 1;
            foreach (long dim in GetBlobShape(layer, index))
                count *= dim;
            DType dtype = GetBlobDType(layer, index);
            Array values = dtype == DType.Float64 ? new double[count] : dtype == DType.Int32 ? (Array)new int[count]
                         : dtype == DType.Uint32 ? (Array)new uint[count] : new float[count];
            int element = dtype == DType.Float64 ? 8 : 4;
            var pin = GCHandle.Alloc(values, GCHandleType.Pinned);
            try
            {
                using (var m = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_model_layer_blob_read(m, layer, index, part, 0, count,
                        pin.AddrOfPinnedObject(), (UIntPtr)(ulong)(count * element)));
            }
            finally
            {
                pin.Free();
            }
            return values;
        }

    }
}
