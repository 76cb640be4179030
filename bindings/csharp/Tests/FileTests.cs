// SPDX-License-Identifier: BSD-2-Clause
// Files of any kind (CBlobFile), the model a file lends, the .npy writers, ReplaceBlobsWith, and
// exceptions' Function and Detail.
using System;
using System.IO;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class FileTests : ContextFixture
    {
        string dir;

        [SetUp]
        public void MakeFolder()
        {
            dir = Path.Combine(Path.GetTempPath(), "cblob-cs-files-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
        }

        [TearDown]
        public void RemoveFolder()
        {
            Directory.Delete(dir, true);
        }

        [Test]
        public void AModelFileLendsItsModelPastTheFilesDispose()
        {
            string sample = Expected.Sample("tiny_lenet.caffemodel");
            Assert.AreEqual(FileKind.Net, Library.DetectKind(sample));
            Model model;
            using (var file = CBlobFile.Open(ctx, sample))
            {
                Assert.AreEqual(FileKind.Net, file.Kind);
                Throws(Status.State, () => { var n = file.NumBlobs; });
                model = file.GetModel();
                file.GetModel().Dispose(); // a second lent model, disposed first: frees nothing
            }
            // The file is disposed; the lent model keeps its handle until it is disposed too.
            using (model)
            {
                Assert.AreEqual("conv1", model.GetLayer(1).Name);
                string npz = Path.Combine(dir, "m.npz");
                model.SaveNpz(npz);
                using (var weights = CBlobFile.Open(ctx, npz))
                using (var weightsModel = weights.GetModel())
                using (var net = Model.OpenFile(ctx, sample))
                    Assert.AreEqual(0, net.ReplaceBlobsWith(weightsModel, ReplaceFlags.All));
                Assert.Greater(model.SaveNpyFolder(Path.Combine(dir, "npy")), 0);
            }
            Assert.Throws<ObjectDisposedException>(() => { var k = model.LayerCount; });
            using (var folder = CBlobFile.Open(ctx, Path.Combine(dir, "npy")))
                Assert.AreEqual(FileKind.NpyFolder, folder.Kind);
        }

        [Test]
        public void NpyOfABlobAndAFileOfBlobs()
        {
            using (var blob = new Blob(ctx, DType.Float32, 2, 3))
            {
                blob.CopyIn(new float[] { 1, 2, 3, 4, 5, 6 });
                byte[] npy = blob.ToNpy();
                Assert.AreEqual(0x93, npy[0]);
                string path = Path.Combine(dir, "b.npy");
                blob.SaveNpy(path);
                CollectionAssert.AreEqual(npy, File.ReadAllBytes(path));
                using (var file = CBlobFile.Open(ctx, path, dtype: DType.Float64))
                {
                    Assert.AreEqual(FileKind.Npy, file.Kind);
                    Assert.AreEqual(1, file.NumBlobs);
                    using (var read = file.GetBlob(0))
                    {
                        Assert.AreEqual(DType.Float64, read.DType);
                        var values = new double[6];
                        read.CopyOut(values);
                        CollectionAssert.AreEqual(new double[] { 1, 2, 3, 4, 5, 6 }, values);
                    }
                    Throws(Status.State, () => file.GetModel());
                    Throws(Status.OutOfRange, () => file.GetBlob(1));
                }
            }
        }

        [Test]
        public void ExceptionsCarryTheFunctionAndTheDetail()
        {
            string prototxt = Path.Combine(dir, "net.prototxt");
            File.WriteAllText(prototxt, "name: \"LeNet\"\nlayer {\n  name: \"data\"\n  type: \"Input\"\n}\n");
            var e = Throws(Status.Parse, () => CBlobFile.Open(ctx, prototxt));
            Assert.AreEqual("cblob_file_open", e.Function);
            StringAssert.Contains("prototxt", e.Detail);
            Assert.AreEqual(e.Function + ": " + e.Detail, e.LibraryMessage);
        }

        // ---- progress and cancellation (Context.SetProgress) ----------------------------------

        /// <summary>A blob of a few MiB, so that a save reports progress more than twice.</summary>
        Blob BigBlob(float fill)
        {
            var values = new float[3 * 1024 * 1024];
            for (int i = 0; i < values.Length; ++i)
                values[i] = fill < 0 ? i : fill;
            var blob = new Blob(ctx, DType.Float32, 3, 1024, 1024);
            blob.CopyIn(values);
            return blob;
        }

        [Test]
        public void ProgressIsReportedAndAStopCancelsTheSave()
        {
            string path = Path.Combine(dir, "b.npy");
            var calls = new System.Collections.Generic.List<Tuple<long, long?>>();
            using (var blob = BigBlob(-1))
            {
                ctx.SetProgress((done, total) => { calls.Add(Tuple.Create(done, total)); return true; });
                blob.SaveNpy(path);
            }
            long size = new FileInfo(path).Length;
            Assert.Greater(calls.Count, 2);
            Assert.AreEqual(Tuple.Create(0L, (long?)size), calls[0]);
            Assert.AreEqual(Tuple.Create(size, (long?)size), calls[calls.Count - 1]);
            byte[] saved = File.ReadAllBytes(path);

            string absent = Path.Combine(dir, "absent.npy");
            using (var other = BigBlob(7))
            {
                // A stop throws Cancelled; the existing file keeps its bytes, a new one is not made.
                ctx.SetProgress((done, total) => done == 0);
                Throws(Status.Cancelled, () => other.SaveNpy(path));
                CollectionAssert.AreEqual(saved, File.ReadAllBytes(path), "the stopped save left the file as it was");
                Throws(Status.Cancelled, () => other.SaveNpy(absent));
                Assert.IsFalse(File.Exists(absent));

                // An exception in the function stops the call and is the Cancelled exception's cause.
                ctx.SetProgress((done, total) => { throw new InvalidOperationException("the function's own"); });
                var e = Throws(Status.Cancelled, () => other.SaveNpy(absent));
                Assert.IsInstanceOf<InvalidOperationException>(e.InnerException);
                Assert.AreEqual("the function's own", e.InnerException.Message);
                Assert.IsFalse(File.Exists(absent));

                // null removes the function: the save goes through.
                ctx.SetProgress(null);
                other.SaveNpy(absent);
                Assert.IsTrue(File.Exists(absent));
            }
        }
    }
}
