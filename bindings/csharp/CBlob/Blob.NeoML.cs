// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): typed copies (generic over the element
// type, from pinned arrays).
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

        // ---- the named layout -----------------------------------------------------------------

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

        // ---- merge and split ------------------------------------------------------------------

        // ---- fills and adds -------------------------------------------------------------------

        // ---- windows --------------------------------------------------------------------------
        // A window views size rows of a parent's first axis from a position. It owns no memory and
        // holds its parent (disposing the parent frees nothing while a window of it lives). If the
        // parent later gets new storage (a reshape past its capacity, Share, SetCpuData of another
        // size), the window keeps viewing the old storage, detached, until it is positioned again,
        // which re-attaches it to the parent's current storage and shape. Spans over a window's
        // memory follow the class's rules, with the window and its parent counting as the blob.

    }
}
