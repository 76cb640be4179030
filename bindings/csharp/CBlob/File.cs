// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the CBlobFile type's documentation and the
// model a file lends (cblob_file_model), which keeps the file's handle until it is disposed too.
using System;

namespace CBlob
{
    /// <summary>
    /// A file opened whatever it holds (<see cref="Open"/>): a <c>.caffemodel</c>, a
    /// <c>.binaryproto</c>, a BlobProtoVector, a <c>.npy</c>, an <c>.npz</c>, a
    /// <c>.safetensors</c> file or a <c>.npy</c> folder, read once, its kind told from its bytes.
    /// A file the library cannot read is refused with a message that says what it is (a prototxt,
    /// an HDF5 snapshot, a zip, a pickle, ...). A file holding a model gives it with
    /// <see cref="GetModel"/>; a file of blobs gives them with <see cref="GetBlob"/>.
    /// (Named CBlobFile so that it never makes <c>System.IO.File</c> ambiguous.)
    /// </summary>
    public sealed partial class CBlobFile : IDisposable
    {
        /// <summary>
        /// The model of a net, an .npz, a safetensors file or a .npy folder: the file's own, lent.
        /// Dispose it when done, like any model; it keeps the file's handle alive until then, so
        /// it stays valid after the file is disposed, and disposing it never frees the file's
        /// model twice. A file of blobs throws a <see cref="CBlobException"/> with
        /// <see cref="Status.State"/>.
        /// </summary>
        public Model GetModel()
        {
            using (var f = guard.Use())
            {
                IntPtr lent;
                CBlobException.Check(NativeMethods.cblob_file_model(f, out lent));
                return Model.Lent(new ModelHandle(lent, handle));
            }
        }
    }

    public sealed partial class Model
    {
        /// <summary>A model over a handle another object lends (<see cref="CBlobFile.GetModel"/>).</summary>
        internal static Model Lent(ModelHandle handle)
        {
            return new Model(handle);
        }
    }
}
