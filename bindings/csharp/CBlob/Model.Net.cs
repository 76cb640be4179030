// SPDX-License-Identifier: BSD-2-Clause
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace CBlob
{
    /// <summary>One of a layer's include or exclude rules (Caffe's NetStateRule).</summary>
    public sealed class Rule
    {
        internal Rule(Phase phase, int minLevel, int maxLevel, string[] stages, string[] notStages)
        {
            Phase = phase;
            MinLevel = minLevel;
            MaxLevel = maxLevel;
            Stages = stages;
            NotStages = notStages;
        }

        /// <summary>The phase the rule asks for (<see cref="CBlob.Phase.None"/> when none).</summary>
        public Phase Phase { get; }
        /// <summary>The lowest level the net may have (int.MinValue when unset).</summary>
        public int MinLevel { get; }
        /// <summary>The highest level the net may have (int.MaxValue when unset).</summary>
        public int MaxLevel { get; }
        /// <summary>Stages the net must have.</summary>
        public IReadOnlyList<string> Stages { get; }
        /// <summary>Stages the net must not have.</summary>
        public IReadOnlyList<string> NotStages { get; }
    }

    /// <summary>One of a layer's param specs (ParamSpec; V1's param, blobs_lr and weight_decay).</summary>
    public sealed class ParamSpec
    {
        internal ParamSpec(string name, float lrMult, float decayMult)
        {
            Name = name;
            LrMult = lrMult;
            DecayMult = decayMult;
        }

        /// <summary>The name layers share the blob by, or null.</summary>
        public string Name { get; }
        /// <summary>The multiplier on the learning rate (1 when unset).</summary>
        public float LrMult { get; }
        /// <summary>The multiplier on the weight decay (1 when unset).</summary>
        public float DecayMult { get; }
    }

    // A model opened from a file keeps every field of it and saves byte for byte what it read,
    // changed blobs' values aside. These members read a layer's structure, read blobs without
    // making handles, export the blobs as safetensors or NumPy .npz, read those back, and replace
    // blobs (net surgery).
    public sealed partial class Model
    {
        delegate Status TextAt(IntPtr model, long layer, long index, out IntPtr text);
        delegate Status CountOf(IntPtr model, long layer, out long count);

        string[] Texts(int layer, CountOf count, TextAt get)
        {
            using (var m = guard.Use())
            {
                long n;
                CBlobException.Check(count(m, layer, out n));
                var texts = new string[n];
                for (long i = 0; i < n; i++)
                {
                    IntPtr text;
                    CBlobException.Check(get(m, layer, i, out text));
                    texts[i] = Text.FromUtf8(text);
                }
                return texts;
            }
        }

        /// <summary>The names of a layer's input blobs.</summary>
        public IReadOnlyList<string> GetBottoms(int layer)
        {
            return Texts(layer, NativeMethods.cblob_model_layer_num_bottoms, NativeMethods.cblob_model_layer_bottom);
        }

        /// <summary>The names of a layer's output blobs.</summary>
        public IReadOnlyList<string> GetTops(int layer)
        {
            return Texts(layer, NativeMethods.cblob_model_layer_num_tops, NativeMethods.cblob_model_layer_top);
        }

        /// <summary>A layer's phase (<see cref="Phase.None"/> when it sets none, always in V1).</summary>
        public Phase GetPhase(int layer)
        {
            Phase phase;
            using (var m = guard.Use())
                CBlobException.Check(NativeMethods.cblob_model_layer_phase(m, layer, out phase));
            return phase;
        }

        /// <summary>A layer's include or exclude rules.</summary>
        public IReadOnlyList<Rule> GetRules(int layer, RuleKind kind)
        {
            using (var m = guard.Use())
            {
                long n;
                CBlobException.Check(NativeMethods.cblob_model_layer_num_rules(m, layer, kind, out n));
                var rules = new Rule[n];
                for (long i = 0; i < n; i++)
                {
                    Phase phase;
                    int low, high;
                    long stages, notStages;
                    CBlobException.Check(NativeMethods.cblob_model_layer_rule(m, layer, kind, i, out phase, out low, out high,
                                                                             out stages, out notStages));
                    rules[i] = new Rule(phase, low, high, Stages(m, layer, kind, i, 0, stages), Stages(m, layer, kind, i, 1, notStages));
                }
                return rules;
            }
        }

        static string[] Stages(IntPtr m, int layer, RuleKind kind, long rule, int not, long count)
        {
            var stages = new string[count];
            for (long j = 0; j < count; j++)
            {
                IntPtr text;
                CBlobException.Check(NativeMethods.cblob_model_layer_rule_stage(m, layer, kind, rule, not, j, out text));
                stages[j] = Text.FromUtf8(text);
            }
            return stages;
        }

        /// <summary>A layer's param specs.</summary>
        public IReadOnlyList<ParamSpec> GetParamSpecs(int layer)
        {
            using (var m = guard.Use())
            {
                long n;
                CBlobException.Check(NativeMethods.cblob_model_layer_num_param_specs(m, layer, out n));
                var specs = new ParamSpec[n];
                for (long i = 0; i < n; i++)
                {
                    IntPtr name;
                    float lr, decay;
                    CBlobException.Check(NativeMethods.cblob_model_layer_param_spec(m, layer, i, out name, out lr, out decay));
                    specs[i] = new ParamSpec(name == IntPtr.Zero ? null : Text.FromUtf8(name), lr, decay);
                }
                return specs;
            }
        }

        /// <summary>
        /// A layer's parameters as a JSON object (convolution_param and the like, by Caffe's field
        /// names; fields no schema knows under "unknown_fields").
        /// </summary>
        public string GetParamsJson(int layer, JsonFlags flags = 0)
        {
            using (var m = guard.Use())
            {
                IntPtr ptr = m;
                return Text.ReadText((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                    NativeMethods.cblob_model_layer_params_json(ptr, layer, (int)flags, buffer, size, out length));
            }
        }

        /// <summary>A layer as `cblob inspect --json` (schema 2) lists it.</summary>
        public string GetLayerJson(int layer, JsonFlags flags = 0)
        {
            using (var m = guard.Use())
            {
                IntPtr ptr = m;
                return Text.ReadText((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                    NativeMethods.cblob_model_layer_json(ptr, layer, (int)flags, buffer, size, out length));
            }
        }

        /// <summary>A blob's shape, without making its handle.</summary>
        public long[] GetBlobShape(int layer, int index)
        {
            var dims = new long[32];
            int axes;
            using (var m = guard.Use())
                CBlobException.Check(NativeMethods.cblob_model_layer_blob_shape(m, layer, index, dims.Length, dims, out axes));
            Array.Resize(ref dims, axes);
            return dims;
        }

        /// <summary>A blob's dtype, without making its handle.</summary>
        public DType GetBlobDType(int layer, int index)
        {
            DType dtype;
            using (var m = guard.Use())
                CBlobException.Check(NativeMethods.cblob_model_layer_blob_dtype(m, layer, index, out dtype));
            return dtype;
        }

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

        /// <summary>
        /// The model's blobs as safetensors bytes (keys &lt;layer&gt;.&lt;index&gt;, or PyTorch's names with
        /// <see cref="ExportFlags.TorchNames"/>; diffs with <see cref="ExportFlags.Diff"/>).
        /// </summary>
        public byte[] ToSafetensors(ExportFlags flags = 0)
        {
            using (var m = guard.Use())
            {
                IntPtr ptr = m;
                return Text.ReadBytes((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                    NativeMethods.cblob_model_to_safetensors(ptr, (int)flags, buffer, size, out length));
            }
        }

        /// <summary>Writes <see cref="ToSafetensors"/>'s bytes to a file, atomically.</summary>
        public void SaveSafetensors(string path, ExportFlags flags = 0)
        {
            byte[] cpath = Text.ToUtf8(Blob.Required(path, nameof(path)), "the path");
            using (var m = guard.Use())
                CBlobException.Check(NativeMethods.cblob_model_to_safetensors_file(m, (int)flags, cpath));
        }

        /// <summary>The model's blobs as a NumPy .npz (keys &lt;layer&gt;/&lt;index&gt;; diffs with <see cref="ExportFlags.Diff"/>).</summary>
        public byte[] ToNpz(ExportFlags flags = 0)
        {
            using (var m = guard.Use())
            {
                IntPtr ptr = m;
                return Text.ReadBytes((byte[] buffer, UIntPtr size, out UIntPtr length) =>
                    NativeMethods.cblob_model_to_npz(ptr, (int)flags, buffer, size, out length));
            }
        }

        /// <summary>Writes <see cref="ToNpz"/>'s bytes to a file, atomically.</summary>
        public void SaveNpz(string path, ExportFlags flags = 0)
        {
            byte[] cpath = Text.ToUtf8(Blob.Required(path, nameof(path)), "the path");
            using (var m = guard.Use())
                CBlobException.Check(NativeMethods.cblob_model_to_npz_file(m, (int)flags, cpath));
        }

        /// <summary>The layers whose blobs <see cref="ExportFlags.TorchNames"/> cannot name.</summary>
        public int[] GetTorchUnmapped()
        {
            using (var m = guard.Use())
            {
                long count;
                CBlobException.Check(NativeMethods.cblob_model_torch_unmapped(m, null, 0, out count));
                var layers = new long[count];
                if (count > 0)
                    CBlobException.Check(NativeMethods.cblob_model_torch_unmapped(m, layers, count, out count));
                return Array.ConvertAll(layers, l => checked((int)l));
            }
        }

        /// <summary>
        /// Copies each layer's blobs of weights into this model's layer of that name (by index; every
        /// shape checked first: one exception lists every mismatch, and nothing changes then).
        /// </summary>
        public void ReplaceBlobs(Model weights)
        {
            Blob.Required(weights, nameof(weights));
            using (var m = guard.Use())
            using (var w = weights.guard.Use())
                CBlobException.Check(NativeMethods.cblob_model_replace_blobs(m, w));
        }

        /// <summary>Reads safetensors bytes into a model: one layer per layer name, blobs by index.</summary>
        public static Model OpenSafetensors(Context context, byte[] bytes)
        {
            Blob.Required(bytes, nameof(bytes));
            return new Model(NewHandle(context, (IntPtr c, out ModelHandle h) =>
                NativeMethods.cblob_model_open_safetensors(c, bytes, (UIntPtr)bytes.Length, out h)));
        }

        /// <summary>Reads a .safetensors file as <see cref="OpenSafetensors"/> does.</summary>
        public static Model OpenSafetensorsFile(Context context, string path)
        {
            byte[] cpath = Text.ToUtf8(Blob.Required(path, nameof(path)), "the path");
            return new Model(NewHandle(context, (IntPtr c, out ModelHandle h) => NativeMethods.cblob_model_open_safetensors_file(c, cpath, out h)));
        }

        /// <summary>Reads .npz bytes (keys &lt;layer&gt;/&lt;index&gt;) into a model.</summary>
        public static Model OpenNpz(Context context, byte[] bytes)
        {
            Blob.Required(bytes, nameof(bytes));
            return new Model(NewHandle(context, (IntPtr c, out ModelHandle h) =>
                NativeMethods.cblob_model_open_npz(c, bytes, (UIntPtr)bytes.Length, out h)));
        }

        /// <summary>Reads a .npz file as <see cref="OpenNpz"/> does.</summary>
        public static Model OpenNpzFile(Context context, string path)
        {
            byte[] cpath = Text.ToUtf8(Blob.Required(path, nameof(path)), "the path");
            return new Model(NewHandle(context, (IntPtr c, out ModelHandle h) => NativeMethods.cblob_model_open_npz_file(c, cpath, out h)));
        }
    }
}
