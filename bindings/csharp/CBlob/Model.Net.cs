// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the reads of several calls into the Rule
// record (its stages are lists within each item) and into a typed array of a blob's values.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace CBlob
{
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
