// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Rule and ParamSpec records, and the
// reads of several calls into them and into a typed array of a blob's values.
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
