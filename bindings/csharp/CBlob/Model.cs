// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Model type's documentation, and the
// reads of several calls into one object (layers, a layer's blobs; the Layer record itself is
// generated).
using System;
using System.Collections.Generic;

namespace CBlob
{
    // The Layer record's fields are generated (Tables.g.cs).
    public sealed partial class Layer
    {
        /// <summary>"conv1 (Convolution, 2 blobs)".</summary>
        public override string ToString()
        {
            return Name + " (" + Type + ", " + BlobCount + " blobs)";
        }
    }

    /// <summary>
    /// A Caffe net's weights: its name, format, and layers, each with a name, a type and blobs.
    /// Open one from a .caffemodel (<see cref="OpenFile"/>, <see cref="Open"/>) or build one
    /// (the constructor, <see cref="AddLayer"/>) and save it (<see cref="Save"/>,
    /// <see cref="ToBytes"/>). Saving writes a weights-only NetParameter (layer names, types and
    /// blobs), which is what Caffe's CopyTrainedLayersFrom reads.
    /// </summary>
    /// <remarks>
    /// Blobs come out of a model as new holders (<see cref="GetLayerBlob"/>): each is a
    /// <see cref="Blob"/> of its own that the caller disposes, that stays valid after the model is
    /// disposed, and whose changes are what the model saves. Thread safety: the getters
    /// (<see cref="Name"/>, <see cref="Format"/>, <see cref="LayerCount"/>,
    /// <see cref="GetLayer"/>, <see cref="FindLayer"/>, <see cref="GetLayerBlob"/>) may be called
    /// from several threads at once; anything else needs one thread at a time.
    /// <see cref="Dispose"/> may race with calls on other threads, as for <see cref="Blob"/>.
    /// </remarks>
    public sealed partial class Model : IDisposable
    {
        /// <summary>The name, type and number of blobs of a layer.</summary>
        public Layer GetLayer(int index)
        {
            IntPtr name, type;
            long count;
            using (var m = guard.Use())
            {
                CBlobException.Check(NativeMethods.cblob_model_layer_name(m, index, out name));
                CBlobException.Check(NativeMethods.cblob_model_layer_type(m, index, out type));
                CBlobException.Check(NativeMethods.cblob_model_layer_num_blobs(m, index, out count));
                return new Layer(Text.FromUtf8(name), Text.FromUtf8(type), checked((int)count));
            }
        }

        /// <summary>Every layer, in file order (a new list each time).</summary>
        public IReadOnlyList<Layer> Layers
        {
            get
            {
                var layers = new Layer[LayerCount];
                for (int i = 0; i < layers.Length; i++)
                    layers[i] = GetLayer(i);
                return layers;
            }
        }

        /// <summary>Every blob of a layer, as new holders the caller disposes.</summary>
        public Blob[] GetLayerBlobs(int layer)
        {
            var blobs = new Blob[GetLayer(layer).BlobCount];
            try
            {
                for (int i = 0; i < blobs.Length; i++)
                    blobs[i] = GetLayerBlob(layer, i);
            }
            catch
            {
                foreach (var b in blobs)
                    b?.Dispose();
                throw;
            }
            return blobs;
        }

    }
}
