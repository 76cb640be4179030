// SPDX-License-Identifier: BSD-2-Clause
// The GPU calls through the C# layer. Without a usable GPU every call that needs one throws with
// a no-GPU status and the library's message, and the calls that do not need one work; with one
// (or with the test double of the driver, which the binding suites run these tests against as
// well, setting CBLOB_BINDINGS_EXPECT_GPU=1), the calls do their work.
using System;
using System.Threading;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class GpuTests
    {
        static CBlobException Throws(Status status, TestDelegate call)
        {
            var e = Assert.Throws<CBlobException>(call);
            Assert.AreEqual(status, e.Status, e.Message);
            return e;
        }

        static void ThrowsNoGpu(Status status, TestDelegate call)
        {
            var e = Throws(status, call);
            Assert.IsTrue(e.IsNoGpu);
            Assert.IsNotEmpty(e.LibraryMessage);
        }

        [Test]
        public void WhatWorksWithoutAGpuToo()
        {
            GpuVersions versions = Gpu.Versions;
            Assert.GreaterOrEqual(versions.Driver, 0);
            Assert.GreaterOrEqual(Gpu.Report.Split('\n').Length, 3, Gpu.Report);
            CollectionAssert.Contains(new[] { CacheMode.Off, CacheMode.Memory, CacheMode.Disk }, Gpu.KernelCacheMode);
            Assert.IsNotNull(Gpu.KernelCacheDirectory);
            using (var ctx = new Context())
            {
                Assert.AreEqual(0, ctx.Device);
                Assert.AreEqual(IntPtr.Zero, ctx.Stream);
                ctx.Synchronize();
                Assert.AreEqual("", ctx.Log);
                ctx.ClearLog();
            }
            Throws(Status.InvalidArgument, () => Gpu.DeviceName(-1));
        }

        [Test]
        public void GpuCallsSayWhyThereIsNoGpuOrWork()
        {
            int devices;
            try
            {
                devices = Gpu.Probe();
            }
            catch (CBlobException e)
            {
                Assert.AreNotEqual("1", Environment.GetEnvironmentVariable("CBLOB_BINDINGS_EXPECT_GPU"), "the test double of the driver was expected: " + e.Message);
                Assert.IsTrue(e.IsNoGpu, e.Message);
                StringAssert.StartsWith("cblob_gpu_probe: ", e.LibraryMessage);
                CallsWithoutAGpu(e.Status);
                return;
            }
            Assert.GreaterOrEqual(devices, 1);
            CallsWithAGpu();
        }

        static void CallsWithoutAGpu(Status status)
        {
            using (var ctx = new Context())
            using (var blob = new Blob(ctx, DType.Float32, 4))
            {
                ThrowsNoGpu(status, () => ctx.SetMode(Mode.Gpu));
                ThrowsNoGpu(status, () => ctx.SetDevice(0));
                ThrowsNoGpu(status, () => ctx.SetStream(IntPtr.Zero));
                ThrowsNoGpu(status, () => ctx.WarmUpKernels(0));
                ThrowsNoGpu(status, () => Gpu.DeviceName(0));
                blob.Fill(1.5);
                ThrowsNoGpu(status, () => blob.GetGpuPointer());
                ThrowsNoGpu(status, () => blob.GetMutableGpuPointer(Part.Diff));
                ThrowsNoGpu(status, () => blob.AsyncPush());
                ThrowsNoGpu(status, () => blob.ToDlpack(Part.Data, Memory.Device, readOnly: true));
                ThrowsNoGpu(status, () => blob.ToDlpackLegacy(Part.Diff, Memory.Device));
                int released = 0;
                ThrowsNoGpu(status, () => blob.SetGpuData(new IntPtr(0x1000), 16, () => Interlocked.Increment(ref released)));
                Assert.AreEqual(0, released, "release never runs after a failure");
                Assert.AreEqual(Head.AtCpu, blob.GetHead(Part.Data));
                Assert.AreEqual(6.0, blob.Asum());
            }
        }

        static void CallsWithAGpu()
        {
            Assert.IsNotEmpty(Gpu.DeviceName(0));
            using (var ctx = new Context())
            {
                ctx.SetDevice(0);
                Throws(Status.State, () => ctx.SetDevice(1));
                using (var blob = new Blob(ctx, DType.Float32, 4))
                {
                    blob.CopyIn(new[] { 1f, 2f, 3f, 4f });
                    Assert.AreNotEqual(IntPtr.Zero, blob.GetGpuPointer());
                    Assert.AreEqual(Head.Synced, blob.GetHead(Part.Data));
                    blob.GetMutableGpuPointer();
                    Assert.AreEqual(Head.AtGpu, blob.GetHead(Part.Data));
                    CollectionAssert.AreEqual(new[] { 1f, 2f, 3f, 4f }, blob.ToArray<float>());
                    blob.CopyIn(new[] { 1f, 1f, 1f, 1f }, Part.Diff);
                    blob.AsyncPush(Part.Diff);
                    ctx.Synchronize();
                    Assert.AreEqual(Head.Synced, blob.GetHead(Part.Diff));
                    Throws(Status.State, () => blob.AsyncPush(Part.Diff));
                }

                // A caller's device buffer: here another blob's device memory, which outlives the use.
                using (var donor = new Blob(ctx, DType.Float32, 4))
                using (var bigger = new Blob(ctx, DType.Float32, 8))
                {
                    donor.CopyIn(new[] { 5f, 6f, 7f, 8f });
                    IntPtr device = donor.GetMutableGpuPointer();
                    int released = 0;
                    using (var taker = new Blob(ctx, DType.Float32, 4))
                    {
                        taker.SetGpuData(device, 16, () => Interlocked.Increment(ref released));
                        Assert.AreEqual(Head.AtGpu, taker.GetHead(Part.Data));
                        CollectionAssert.AreEqual(new[] { 5f, 6f, 7f, 8f }, taker.ToArray<float>());
                        Assert.AreEqual(0, released);
                    }
                    Assert.AreEqual(1, released, "released once, when the blob let go");
                    Throws(Status.InvalidArgument, () => bigger.SetGpuData(device, 16));
                }

                DlpackWithAGpu(ctx);

                ctx.SetMode(Mode.Gpu);
                using (var onGpu = new Blob(ctx, DType.Float32, 1000))
                {
                    onGpu.Fill(0.5);
                    Assert.AreEqual(Head.AtGpu, onGpu.GetHead(Part.Data));
                    Assert.AreEqual(500.0, onGpu.Asum());
                }

                // Host memory allocated in GPU mode is pinned: its DLPack export says CudaHost.
                using (var pinned = new Blob(ctx, DType.Float32, 3))
                {
                    Span<float> values = pinned.GetMutableData<float>();
                    values[0] = 1f;
                    values[1] = 2f;
                    values[2] = 3f;
                    using (var tensor = pinned.ToDlpack(readOnly: true))
                    {
                        Assert.AreEqual(new DLDevice(DLDeviceType.CudaHost, 0), tensor.Device);
                        CollectionAssert.AreEqual(new[] { 1f, 2f, 3f }, tensor.AsReadOnlySpan<float>().ToArray());
                    }
                }
                if (Gpu.KernelCacheMode != CacheMode.Disk)
                    Throws(Status.State, () => ctx.WarmUpKernels(80));
            }
        }

        /// <summary>
        /// DLPack exports of the device copy: Cuda on the context's device, the head moved as the
        /// device accessors move it, and a CUDA tensor taken back in as device data. Device memory
        /// is only read through cblob (the double's is not host-readable).
        /// </summary>
        static void DlpackWithAGpu(Context ctx)
        {
            var blob = new Blob(ctx, DType.Float32, 4);
            blob.CopyIn(new[] { 1f, 2f, 3f, 4f });
            using (var tensor = blob.ToDlpack(Part.Data, Memory.Device, readOnly: true))
            {
                Assert.AreEqual(new DLDevice(DLDeviceType.Cuda, ctx.Device), tensor.Device);
                Assert.IsTrue(tensor.IsReadOnly);
                CollectionAssert.AreEqual(new long[] { 4 }, tensor.Shape);
                Assert.AreEqual(Head.Synced, blob.GetHead(Part.Data), "a read, as GetGpuPointer");
                Assert.AreEqual(blob.GetGpuPointer(), tensor.Data);
                Throws(Status.InvalidArgument, () => tensor.AsReadOnlySpan<float>());

                using (var legacy = blob.ToDlpackLegacy(Part.Data, Memory.Device))
                {
                    Assert.AreEqual(Head.AtGpu, blob.GetHead(Part.Data), "a write, as GetMutableGpuPointer");
                    Assert.AreEqual(tensor.Data, legacy.Data);
                }

                // Into a blob of another context: the device copy is the data (head AT_GPU), shared.
                using (var other = new Context())
                using (var back = Blob.FromDlpack(other, blob.ToDlpack(Part.Data, Memory.Device)))
                {
                    Assert.AreEqual(Head.AtGpu, back.GetHead(Part.Data));
                    Assert.AreEqual(tensor.Data, back.GetGpuPointer());
                    CollectionAssert.AreEqual(new[] { 1f, 2f, 3f, 4f }, back.ToArray<float>());
                    back.Scale(2);
                    CollectionAssert.AreEqual(new[] { 2f, 4f, 6f, 8f }, blob.ToArray<float>());

                    // On a stream: the importing context's own adds no wait, the legacy default
                    // (zero) and the per-thread default (2) are waited for.
                    foreach (IntPtr stream in new[] { other.Stream, IntPtr.Zero, new IntPtr(2) })
                        using (var onStream = Blob.FromDlpackOnStream(other, blob.ToDlpack(Part.Data, Memory.Device), stream))
                        {
                            Assert.AreEqual(tensor.Data, onStream.GetGpuPointer());
                            CollectionAssert.AreEqual(new[] { 2f, 4f, 6f, 8f }, onStream.ToArray<float>());
                        }
                    string driver = Environment.GetEnvironmentVariable("CBLOB_CUDA_DRIVER") ?? "";
                    if (driver.Contains("fake_cuda"))
                    {
                        // A handle the driver does not know: only the test double can be handed one safely.
                        using (var device = blob.ToDlpack(Part.Data, Memory.Device))
                        {
                            Throws(Status.InvalidArgument, () => Blob.FromDlpackOnStream(other, device, new IntPtr(0x5eed0)));
                            Assert.IsTrue(device.IsOwned, "the refused tensor is the caller's again");
                        }
                    }
                }
                // The tensor outlives its blob (it holds the device memory).
                blob.Dispose();
                Assert.AreNotEqual(IntPtr.Zero, tensor.Data);
            }
        }
    }
}
