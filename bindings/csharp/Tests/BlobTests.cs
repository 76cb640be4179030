// SPDX-License-Identifier: BSD-2-Clause
// The bindings' common scenario (the parts the current API covers), plus what is particular to
// the C# layer: spans, SafeHandle lifetimes, pinned buffers, library loading. NUnit 2.6.
using System;
using System.Linq;
using System.Threading;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class BlobTests : ContextFixture
    {
        [Test]
        public void LoadsTheLibraryOfThisBuild()
        {
            // The test driver maps libcblob.so.1 to this build's file (CBlob.dll.config) and
            // names that file in CBLOB_TEST_LIBRARY.
            string wanted = Environment.GetEnvironmentVariable("CBLOB_TEST_LIBRARY");
            Assert.IsFalse(string.IsNullOrEmpty(wanted), "CBLOB_TEST_LIBRARY names the library under test");
            Assert.AreEqual(Constants.AbiVersionMajor, Library.AbiVersionMajor);
            string real = new System.IO.FileInfo(wanted).FullName;
            StringAssert.Contains(real, System.IO.File.ReadAllText("/proc/self/maps"));
            Assert.GreaterOrEqual(Library.AbiVersionMinor, Constants.AbiVersionMinor);
            Assert.AreEqual(3, Library.Version.Split('.').Length, Library.Version);
            StringAssert.Contains("BLIS", Library.BlasInfo);
            Assert.IsNotEmpty(Library.CpuFeatures);
            Assert.AreEqual("libcblob.so.1", Library.FileName);
        }

        [Test]
        public void CreateReshapeFillUpdateAsum()
        {
            using (var blob = new Blob(ctx, DType.Float32, 2, 3, 4))
            {
                Assert.AreEqual(24, blob.Count);
                Assert.AreEqual(3, blob.NumAxes);
                CollectionAssert.AreEqual(new long[] { 2, 3, 4 }, blob.Shape);
                Assert.AreEqual(Head.Uninitialized, blob.GetHead(Part.Data));

                blob.Reshape(3, 4);
                CollectionAssert.AreEqual(new long[] { 3, 4 }, blob.Shape);
                Assert.AreEqual("3 4 (12)", blob.ShapeString);
                Assert.AreEqual(24, blob.Capacity, "shrinking keeps the storage");
                Assert.AreEqual(4, blob.ShapeAt(-1));
                Assert.AreEqual(4, blob.CountRange(1, 2));
                Assert.AreEqual(0, blob.CanonicalAxis(-2));
                Assert.AreEqual(9, blob.Offset(2, 1));

                Span<float> data = blob.GetMutableData<float>();
                Assert.AreEqual(12, data.Length);
                for (int i = 0; i < data.Length; i++)
                    data[i] = i;
                blob.GetMutableDiff<float>().Fill(0.5f);
                Assert.AreEqual(Head.AtCpu, blob.GetHead(Part.Data));
                blob.Update();

                float[] expected = Enumerable.Range(0, 12).Select(i => i - 0.5f).ToArray();
                CollectionAssert.AreEqual(expected, blob.ToArray<float>());
                Assert.AreEqual(expected.Sum(x => Math.Abs((double)x)), blob.Asum(Part.Data));
                Assert.AreEqual(12 * 0.25, blob.Sumsq(Part.Diff));
                Assert.AreEqual(10.5, blob.ReadElement(Part.Data, 2, 3));

                blob.Scale(4.0, Part.Diff);
                Assert.IsTrue(blob.ToArray<float>(Part.Diff).All(x => x == 2.0f));
            }
        }

        [Test]
        public void LegacyShapesAndEmptyBlobs()
        {
            using (var blob = Blob.CreateLegacy(ctx, DType.Float64, 2, 3, 4, 5))
            using (var empty = Blob.CreateEmpty(ctx, DType.Float64))
            {
                Assert.AreEqual(new long[] { 2, 3, 4, 5 }, new[] { blob.Num, blob.Channels, blob.Height, blob.Width });
                Assert.AreEqual(119, blob.OffsetLegacy(1, 2, 3, 4));
                Throws(Status.OutOfRange, () => blob.OffsetLegacy(2, 0, 0, 0));
                blob.ReshapeLegacy(1, 1, 2, 2);
                Assert.AreEqual(2, blob.LegacyShape(-1));

                Assert.AreEqual(0, empty.Count);
                Assert.AreEqual(0, empty.GetData<double>().Length);
                empty.ReshapeLike(blob);
                CollectionAssert.AreEqual(blob.Shape, empty.Shape);
            }
        }

        [Test]
        public void BadShapeThrowsWithTheLibraryMessageAndChangesNothing()
        {
            var e = Throws(Status.Shape, () => new Blob(ctx, DType.Float32, 2, -3));
            StringAssert.StartsWith("cblob_blob_create: ", e.LibraryMessage);
            StringAssert.Contains("shape[1] is -3", e.LibraryMessage);
            StringAssert.EndsWith("(CBLOB_ERR_SHAPE)", e.Message);

            using (var blob = new Blob(ctx, DType.Float32, 5))
            {
                Throws(Status.Shape, () => blob.Reshape(new long[33]));
                Throws(Status.Overflow, () => blob.Reshape(long.MaxValue, 4));
                CollectionAssert.AreEqual(new long[] { 5 }, blob.Shape);
                Throws(Status.OutOfRange, () => blob.ShapeAt(3));
                Throws(Status.State, () => blob.Update());
            }
        }

        [Test]
        public void DTypesAreChecked()
        {
            using (var ints = new Blob(ctx, DType.Int32, 3))
            using (var uints = new Blob(ctx, DType.Uint32, 2))
            using (var floats = new Blob(ctx, DType.Float32, 3))
            using (var doubles = new Blob(ctx, DType.Float64, 3))
            {
                Assert.AreEqual(DType.Int32, ints.DType);
                StringAssert.Contains("Int32", Throws(Status.DType, () => ints.GetData<float>()).Message);
                Throws(Status.DType, () => ints.GetMutableData<long>());
                var values = ints.GetMutableData<int>();
                values[0] = 1; values[1] = -2; values[2] = 3;
                CollectionAssert.AreEqual(new[] { 1, -2, 3 }, ints.ToArray<int>());
                Throws(Status.NotImplemented, () => ints.Asum());

                var u = uints.GetMutableData<uint>();
                u[1] = uint.MaxValue;
                Assert.AreEqual((double)uint.MaxValue, uints.ReadElement(Part.Data, 1));

                Throws(Status.DType, () => doubles.ShareData(floats));
            }
        }

        [Test]
        public void ShareDataBetweenTwoBlobs()
        {
            using (var a = new Blob(ctx, DType.Float32, 2, 3))
            using (var b = new Blob(ctx, DType.Float32, 6))
            using (var wrongCount = new Blob(ctx, DType.Float32, 7))
            {
                new float[] { 1, 2, 3, 4, 5, 6 }.AsSpan().CopyTo(a.GetMutableData<float>());
                b.ShareData(a);
                CollectionAssert.AreEqual(a.ToArray<float>(), b.ToArray<float>());
                var bData = b.GetMutableData<float>(); // mcs cannot assign through a returned span
                bData[0] = -10;
                Assert.AreEqual(-10f, a.GetData<float>()[0], "one memory");
                Assert.AreEqual(0f, b.GetDiff<float>()[0], "diffs stay separate");
                Throws(Status.Shape, () => wrongCount.ShareData(a));

                a.Dispose();
                Assert.AreEqual(6f, b.GetData<float>()[5], "the memory outlives the blob that made it");
            }
        }

        [Test]
        public void CopyFromAndSetCpuData()
        {
            using (var src = new Blob(ctx, DType.Float32, 4))
            using (var dst = new Blob(ctx, DType.Float32, 2))
            {
                new float[] { 1, -2, 3, -4 }.AsSpan().CopyTo(src.GetMutableData<float>());
                Throws(Status.Shape, () => dst.CopyFrom(src));
                dst.CopyFrom(src, Part.Data, reshape: true);
                CollectionAssert.AreEqual(new float[] { 1, -2, 3, -4 }, dst.ToArray<float>());

                float[] buffer = { 0.5f, 1.5f, 2.5f, 3.5f };
                dst.SetCpuData(buffer);
                Assert.AreEqual(8.0, dst.Asum());
                buffer[0] = 100;
                Assert.AreEqual(100f, dst.GetData<float>()[0], "the blob uses the array in place");
                var view = dst.GetMutableData<float>();
                view[1] = -1;
                Assert.AreEqual(-1f, buffer[1]);

                StringAssert.Contains("size_bytes is 12", Throws(Status.InvalidArgument, () => dst.SetCpuData(new float[3])).Message);
                Throws(Status.DType, () => dst.SetCpuData(new double[4]));
                Assert.AreEqual(100f, dst.GetData<float>()[0], "a failed call changes nothing");
                dst.SetCpuData(new float[] { 9, 9, 9, 9 });
                Assert.AreEqual(36.0, dst.Asum());
            }
        }

        [Test]
        public void PinnedBuffersAreReleasedWithTheBlob()
        {
            var weak = PinIntoBlobThenDispose();
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            Assert.IsFalse(weak.IsAlive, "the pin ended when the blob let go of the array");
        }

        WeakReference PinIntoBlobThenDispose()
        {
            var array = new float[16];
            using (var blob = new Blob(ctx, DType.Float32, 16))
                blob.SetCpuData(array);
            return new WeakReference(array);
        }

        [Test]
        public void DisposeTwiceIsSafeAndUseAfterDisposeThrows()
        {
            var blob = new Blob(ctx, DType.Float32, 3);
            blob.Dispose();
            blob.Dispose();
            Assert.IsTrue(blob.IsDisposed);
            Assert.Throws<ObjectDisposedException>(() => { var n = blob.Count; });
            Assert.Throws<ObjectDisposedException>(() => blob.Reshape(4));
            Assert.AreEqual("Blob(disposed)", blob.ToString());

            var other = new Context();
            other.Dispose();
            other.Dispose();
            Assert.Throws<ObjectDisposedException>(() => new Blob(other, DType.Float32, 1));
        }

        [Test]
        public void BlobsOutliveTheirContextObject()
        {
            var local = new Context();
            using (var blob = new Blob(local, DType.Float32, 3))
            {
                local.Dispose();
                blob.GetMutableData<float>().Fill(2);
                Assert.AreEqual(6.0, blob.Asum());
            }
        }

        [Test]
        public void FinalizerReleasesForgottenBlobs()
        {
            var weak = MakeAndForget();
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            Assert.IsFalse(weak.IsAlive);
        }

        WeakReference MakeAndForget()
        {
            // Tracking resurrection: the reference dies only after the handle's finalizer ran.
            return new WeakReference(new Blob(ctx, DType.Float32, 8).Handle, true);
        }

        [Test]
        public void GpuModeWithoutAGpuSaysWhyAndKeepsCpuMode()
        {
            try
            {
                ctx.SetMode(Mode.Gpu);
                Assert.AreEqual(Mode.Gpu, ctx.Mode);
            }
            catch (CBlobException e)
            {
                var noGpu = new[] { Status.NoDriver, Status.StubDriver, Status.NoDevice, Status.DriverTooOld };
                CollectionAssert.Contains(noGpu, e.Status, e.Message);
                Assert.IsNotEmpty(e.LibraryMessage);
                Assert.AreEqual(Mode.Cpu, ctx.Mode);
            }
        }

        [Test]
        public void ErrorMessagesArePerThread()
        {
            string workerMessage = null;
            var worker = new Thread(() =>
            {
                try { new Blob(ctx, DType.Float32, -1); }
                catch (CBlobException e) { workerMessage = e.LibraryMessage; }
            });
            worker.Start();
            var mine = Throws(Status.Shape, () => new Blob(ctx, DType.Float32, -7));
            worker.Join();
            StringAssert.Contains("shape[0] is -7", mine.LibraryMessage);
            StringAssert.Contains("shape[0] is -1", workerMessage);
        }
    }
}
