// SPDX-License-Identifier: BSD-2-Clause
// Net structure, lossless saving, exports read back and net surgery through the C# layer.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class NetTests : ContextFixture
    {
        static byte[] Varint(ulong v)
        {
            var bytes = new List<byte>();
            for (; v >= 0x80; v >>= 7)
                bytes.Add((byte)(v | 0x80));
            bytes.Add((byte)v);
            return bytes.ToArray();
        }

        static byte[] Field(int number, byte[] payload)
        {
            return Varint((ulong)(number << 3 | 2)).Concat(Varint((ulong)payload.Length)).Concat(payload).ToArray();
        }

        static byte[] Field(int number, string text)
        {
            return Field(number, Encoding.UTF8.GetBytes(text));
        }

        static byte[] IntField(int number, ulong v)
        {
            return Varint((ulong)(number << 3)).Concat(Varint(v)).ToArray();
        }

        /// <summary>A V2 net: conv1 with a bottom, a top, phase TEST, a param spec, an include rule,
        /// convolution parameters, a fork's field and a 2-value blob.</summary>
        static byte[] StructuredNet()
        {
            byte[] spec = Field(1, "w").Concat(new byte[] { 0x1d, 0, 0, 0, 0x40 }).ToArray();
            byte[] rule = IntField(1, 0).Concat(Field(4, "s")).ToArray();
            byte[] values = BitConverter.GetBytes(1.5f).Concat(BitConverter.GetBytes(-2f)).ToArray();
            byte[] blob = Field(7, Field(1, Varint(2))).Concat(Field(5, values)).ToArray();
            byte[] layer = new[] { Field(1, "conv1"), Field(2, "Convolution"), Field(3, "data"), Field(4, "conv1"),
                                   IntField(10, 1), Field(6, spec), Field(8, rule), Field(106, IntField(1, 8)),
                                   Field(5000, "fork"), Field(7, blob) }.SelectMany(b => b).ToArray();
            return Field(1, "net").Concat(Field(100, layer)).ToArray();
        }

        [Test]
        public void StructureAndLosslessSave()
        {
            byte[] bytes = StructuredNet();
            using (var model = Model.Open(ctx, bytes))
            {
                CollectionAssert.AreEqual(new[] { "data" }, model.GetBottoms(0));
                CollectionAssert.AreEqual(new[] { "conv1" }, model.GetTops(0));
                Assert.AreEqual(Phase.Test, model.GetPhase(0));
                var rules = model.GetRules(0, RuleKind.Include);
                Assert.AreEqual(1, rules.Count);
                Assert.AreEqual(Phase.Train, rules[0].Phase);
                Assert.AreEqual(int.MinValue, rules[0].MinLevel);
                CollectionAssert.AreEqual(new[] { "s" }, rules[0].Stages);
                var specs = model.GetParamSpecs(0);
                Assert.AreEqual("w", specs[0].Name);
                Assert.AreEqual(2f, specs[0].LrMult);
                Assert.AreEqual(1f, specs[0].DecayMult);
                Assert.AreEqual("{\"convolution_param\":{\"num_output\":8},\"unknown_fields\":[{\"field\":5000,\"wire_type\":2,\"count\":1,\"bytes\":4,\"first_bytes\":\"666f726b\"}]}",
                                model.GetParamsJson(0));
                StringAssert.Contains("\"tops\":[\"conv1\"]", model.GetLayerJson(0));
                CollectionAssert.AreEqual(new[] { 2L }, model.GetBlobShape(0, 0));
                CollectionAssert.AreEqual(new[] { 1.5f, -2f }, (float[])model.ReadBlob(0, 0));
                CollectionAssert.AreEqual(bytes, model.ToBytes(true));
            }
        }

        [Test]
        public void ExportsReadBackAndSurgery()
        {
            using (var model = Model.Open(ctx, StructuredNet()))
            {
                foreach (var read in new[] { Model.OpenSafetensors(ctx, model.ToSafetensors()), Model.OpenNpz(ctx, model.ToNpz()) })
                {
                    using (read)
                    {
                        CollectionAssert.AreEqual(new[] { 1.5f, -2f }, (float[])read.ReadBlob(0, 0));
                        model.ReplaceBlobs(read);
                    }
                }
                StringAssert.Contains("\"conv1.weight\"", Encoding.UTF8.GetString(model.ToSafetensors(ExportFlags.TorchNames)));
                Assert.AreEqual(0, model.GetTorchUnmapped().Length);
                using (var weights = new Model(ctx, NetFormat.V2))
                using (var wrong = new Blob(ctx, DType.Float32, 3))
                {
                    weights.AddLayer("conv1", "", wrong);
                    var error = Assert.Throws<CBlobException>(() => model.ReplaceBlobs(weights));
                    Assert.AreEqual(Status.Shape, error.Status);
                    StringAssert.Contains("conv1 blob 0", error.Message);
                }
            }
        }
    }
}
