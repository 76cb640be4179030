// SPDX-License-Identifier: BSD-2-Clause
// The bindings' scenario, Caffe formats part: a real LeNet model and the bundled sample against
// their independently decoded answers; BlobProto and BlobProtoVector round trips; building and
// saving a model; parse errors with the library's message.
using System;
using System.IO;
using System.Linq;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class FormatsTests : ContextFixture
    {
        /// <summary>
        /// Opens a model and checks every layer's name, type, blob shapes, first values and sums
        /// against its .layers.txt; the caller disposes the model.
        /// </summary>
        Model CheckModel(string modelPath, string expectedPath)
        {
            string name;
            var expected = Expected.Layers(expectedPath, out name);
            var model = Model.OpenFile(ctx, modelPath);
            Assert.AreEqual(name, model.Name);
            Assert.AreEqual(NetFormat.V2, model.Format);
            Assert.AreEqual(expected.Count, model.LayerCount);
            for (int i = 0; i < expected.Count; i++)
            {
                Layer layer = model.GetLayer(i);
                Assert.AreEqual(expected[i].Name, layer.Name);
                Assert.AreEqual(expected[i].Type, layer.Type);
                Assert.AreEqual(expected[i].Blobs.Count, layer.BlobCount, layer.Name);
                Blob[] blobs = model.GetLayerBlobs(i);
                for (int j = 0; j < blobs.Length; j++)
                {
                    using (Blob blob = blobs[j])
                    {
                        ExpectedBlob want = expected[i].Blobs[j];
                        CollectionAssert.AreEqual(want.Shape, blob.Shape, layer.Name);
                        float[] data = blob.ToArray<float>();
                        double sum = data.Sum(x => (double)x);
                        Assert.AreEqual(want.Count, data.Length);
                        Assert.IsTrue(Expected.Agree(data[0], want.First), "{0}.blobs[{1}] first {2} != {3}", layer.Name, j, data[0], want.First);
                        Assert.IsTrue(Expected.Agree(sum, want.Sum), "{0}.blobs[{1}] sum {2} != {3}", layer.Name, j, sum, want.Sum);
                        Assert.AreEqual(Head.Uninitialized, blob.GetHead(Part.Diff), "a .caffemodel has no diffs");
                    }
                }
            }
            Assert.AreEqual(7, model.FindLayer("ip2"));
            Assert.AreEqual(-1, model.FindLayer("no such layer"));
            return model;
        }

        [Test]
        public void LeNetFromTheSharedCaffeFiles()
        {
            string file = Path.Combine(Expected.CaffeDataDir, "lenet_iter_10000.caffemodel");
            string answers = Path.Combine(Expected.CaffeDataDir, "lenet_iter_10000.layers.txt");
            if (!File.Exists(file) || !File.Exists(answers))
                Assert.Ignore("the shared Caffe files are absent: " + file);
            Blob ip1;
            using (Model model = CheckModel(file, answers))
                ip1 = model.GetLayerBlob(5, 0);
            using (ip1)
            {
                CollectionAssert.AreEqual(new long[] { 500, 800 }, ip1.Shape, "a blob outlives its model");
                byte[] bytes = File.ReadAllBytes(file);
                Assert.AreEqual(ProtoKind.Net, Proto.Detect(bytes));
                using (Model again = Model.Open(ctx, bytes))
                using (Blob b = again.GetLayerBlob(5, 0))
                    Assert.AreEqual(ip1.Asum(), b.Asum());
            }
        }

        [Test]
        public void TheBundledSampleModel()
        {
            string path = Expected.Sample("tiny_lenet.caffemodel");
            using (Model model = CheckModel(path, Expected.Sample("tiny_lenet.layers.txt")))
            {
                Assert.AreEqual(ProtoKind.Net, Proto.DetectFile(path));
                Assert.AreEqual("conv1 (Convolution, 2 blobs)", model.Layers[1].ToString());
                // Saved again, the bytes are the file's: cblob wrote the sample.
                CollectionAssert.AreEqual(File.ReadAllBytes(path), model.ToBytes());
            }
        }

        [Test]
        public void BlobProtoBytesRoundTrip()
        {
            using (var blob = new Blob(ctx, DType.Float32, 2, 3))
            using (var doubles = new Blob(ctx, DType.Float64, 6))
            {
                blob.CopyIn(new[] { 1f, -2f, 3.5f, 0f, 1e-3f, -7.25f });
                blob.Fill(0.5, Part.Diff);
                byte[] bytes = blob.ToProto(writeDiff: true);
                Assert.AreEqual(ProtoKind.Blob, Proto.Detect(bytes));
                Assert.IsTrue(blob.ShapeEqualsProto(bytes));
                using (Blob back = Blob.FromProto(ctx, bytes))
                {
                    CollectionAssert.AreEqual(blob.ToArray<float>(), back.ToArray<float>());
                    Assert.AreEqual(3.0, back.Asum(Part.Diff));
                }

                Assert.IsFalse(doubles.ShapeEqualsProto(bytes));
                var e = Throws(Status.Shape, () => doubles.LoadProto(bytes));
                StringAssert.StartsWith("cblob_blob_from_proto: ", e.LibraryMessage);
                doubles.LoadProto(bytes, reshape: true);
                Assert.AreEqual(-7.25, doubles.ReadElement(Part.Data, 1, 2));
                // Without a diff in the bytes, the diff stays.
                doubles.Fill(9, Part.Diff);
                doubles.LoadProto(blob.ToProto());
                Assert.AreEqual(54.0, doubles.Asum(Part.Diff));
            }
        }

        [Test]
        public void BlobProtoFilesAndVectors()
        {
            string dir = Path.Combine(Path.GetTempPath(), "cblob-csharp-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
            try
            {
                using (var a = new Blob(ctx, DType.Float64, 3))
                using (var ints = new Blob(ctx, DType.Int32, 2, 2))
                using (var into = Blob.CreateEmpty(ctx, DType.Float32))
                {
                    a.CopyIn(new[] { 1.0, 2.0, 3.0 });
                    ints.CopyIn(new[] { 4, -5, 6, int.MaxValue });
                    string path = Path.Combine(dir, "a.binaryproto");
                    a.SaveProto(path);
                    Assert.AreEqual(ProtoKind.Blob, Proto.DetectFile(path));
                    using (Blob read = Blob.FromProtoFile(ctx, path))
                        CollectionAssert.AreEqual(new[] { 1.0, 2.0, 3.0 }, read.ToArray<double>());
                    into.LoadProtoFile(path, reshape: true);
                    CollectionAssert.AreEqual(new[] { 1f, 2f, 3f }, into.ToArray<float>());

                    byte[] bytes = Proto.VectorToBytes(new[] { a, ints });
                    Assert.AreEqual(ProtoKind.BlobVector, Proto.Detect(bytes));
                    Blob[] blobs = Proto.VectorFromBytes(ctx, bytes);
                    Assert.AreEqual(2, blobs.Length);
                    // Integer blobs travel as double_data and come back as float64, exactly.
                    Assert.AreEqual(DType.Float64, blobs[1].DType);
                    CollectionAssert.AreEqual(new[] { 4.0, -5.0, 6.0, int.MaxValue }, blobs[1].ToArray<double>());
                    foreach (Blob b in blobs)
                        b.Dispose();

                    string vpath = Path.Combine(dir, "v.binaryproto");
                    Proto.SaveVector(vpath, new[] { ints });
                    Blob[] fromFile = Proto.VectorFromFile(ctx, vpath);
                    Assert.AreEqual(1, fromFile.Length);
                    fromFile[0].Dispose();
                    Assert.AreEqual(0, Proto.VectorFromBytes(ctx, new byte[0]).Length);

                    var e = Throws(Status.IO, () => Blob.FromProtoFile(ctx, Path.Combine(dir, "missing.binaryproto")));
                    StringAssert.Contains("missing.binaryproto", e.LibraryMessage);
                    Throws(Status.InvalidArgument, () => Proto.DetectFile("bad\0path"));
                    Assert.Throws<ArgumentNullException>(() => Proto.Detect(null));
                }
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        [Test]
        public void BuildSaveAndReopenAModel()
        {
            string path = Path.Combine(Path.GetTempPath(), "cblob-csharp-" + Guid.NewGuid().ToString("N") + ".caffemodel");
            using (var model = new Model(ctx, NetFormat.V2, "built"))
            {
                using (var weights = new Blob(ctx, DType.Float32, 2, 2))
                using (var bias = new Blob(ctx, DType.Float32, 2))
                {
                    weights.CopyIn(new[] { 0.5f, -1f, 2f, 4f });
                    model.AddLayer("data", "Input");
                    model.AddLayer("fc", "InnerProduct", weights, bias);
                    bias.Fill(0.25); // the model writes the blobs' values at save time
                }
                model.Save(path);
            }
            try
            {
                using (var read = Model.OpenFile(ctx, path))
                {
                    Assert.AreEqual("built", read.Name);
                    CollectionAssert.AreEqual(new[] { "data (Input, 0 blobs)", "fc (InnerProduct, 2 blobs)" }, read.Layers.Select(l => l.ToString()));
                    using (Blob bias = read.GetLayerBlob(1, 1))
                    {
                        CollectionAssert.AreEqual(new[] { 0.25f, 0.25f }, bias.ToArray<float>());
                        // Changes through a blob taken from the model are what the model saves.
                        bias.Fill(1);
                        using (var again = Model.Open(ctx, read.ToBytes()))
                        using (Blob saved = again.GetLayerBlob(1, 1))
                            Assert.AreEqual(2.0, saved.Asum());
                    }
                    Throws(Status.OutOfRange, () => read.GetLayerBlob(1, 2));
                    read.Dispose();
                    Assert.Throws<ObjectDisposedException>(() => { var n = read.LayerCount; });
                }
            }
            finally
            {
                File.Delete(path);
            }
            using (var unnamed = new Model(ctx, NetFormat.V2))
            using (var reread = Model.Open(ctx, unnamed.ToBytes()))
                Assert.IsNull(reread.Name);
        }

        [Test]
        public void FormatErrorsCarryTheLibraryMessage()
        {
            using (var v1 = new Model(ctx, NetFormat.V1, "old"))
            {
                var e = Throws(Status.InvalidArgument, () => v1.AddLayer("conv", "Convolution"));
                StringAssert.StartsWith("cblob_model_add_layer: ", e.LibraryMessage);
                v1.AddLayer("conv", "CONVOLUTION");
                using (var read = Model.Open(ctx, v1.ToBytes()))
                {
                    Assert.AreEqual(NetFormat.V1, read.Format);
                    Assert.AreEqual("CONVOLUTION", read.GetLayer(0).Type);
                }
            }
            byte[] sample = File.ReadAllBytes(Expected.Sample("tiny_lenet.caffemodel"));
            var parse = Throws(Status.Parse, () => Model.Open(ctx, sample.Take(sample.Length / 2).ToArray()));
            StringAssert.StartsWith("cblob_model_open: ", parse.LibraryMessage);
            StringAssert.Contains("NetParameter.layer at byte ", parse.LibraryMessage);
            Throws(Status.InvalidArgument, () => new Model(ctx, NetFormat.V2, "a\0b"));
        }
    }
}
