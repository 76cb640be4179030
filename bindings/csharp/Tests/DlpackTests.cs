// SPDX-License-Identifier: BSD-2-Clause
// DLPack through the C# layer: the mirror structs against the C header, round trips that share
// memory, who runs the deleter (counted by a counting deleter put in front of the producer's),
// refused imports that leave the tensor with the caller, and the read-only flag. Device exports
// are in GpuTests.cs, which runs against the test double of the driver too.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Runtime.InteropServices;
using System.Threading;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class DlpackTests : ContextFixture
    {
        Blob FloatBlob(float[] values, params long[] shape)
        {
            var blob = new Blob(ctx, DType.Float32, shape);
            blob.CopyIn(values);
            return blob;
        }

        // ---- counting deleters ------------------------------------------------------------------

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate void DeleterFn(IntPtr self);

        /// <summary>The producer's deleter and the number of calls of one interposed tensor.</summary>
        internal sealed class Counter
        {
            internal IntPtr Tensor;
            internal IntPtr Original;
            internal int count;
            public int Deletes { get { return Volatile.Read(ref count); } }
        }

        // Kept in static fields: the native thunks must outlive every tensor.
        static readonly DeleterFn Counting = CountingDelete;
        static readonly IntPtr CountingPtr = Marshal.GetFunctionPointerForDelegate(Counting);
        static readonly DeleterFn FreeOwned = ptr => Marshal.FreeHGlobal(ptr);
        static readonly IntPtr FreeOwnedPtr = Marshal.GetFunctionPointerForDelegate(FreeOwned);
        static readonly List<Counter> Interposed = new List<Counter>();

        // An entry stays after the call, so that a second call is counted (and does not reach the
        // producer's deleter twice); the newest entry for an address wins (addresses are reused).
        static void CountingDelete(IntPtr self)
        {
            Counter counter;
            int before;
            lock (Interposed)
            {
                counter = Interposed.Last(c => c.Tensor == self);
                before = counter.count++;
            }
            if (before == 0 && counter.Original != IntPtr.Zero)
                ((DeleterFn)Marshal.GetDelegateForFunctionPointer(counter.Original, typeof(DeleterFn)))(self);
        }

        static Counter CountDeletes(DlpackTensorBase tensor)
        {
            return CountDeletes(tensor.Pointer, tensor is LegacyDlpackTensor);
        }

        static Counter CountDeletes(IntPtr tensor, bool legacy)
        {
            int offset = (int)Marshal.OffsetOf(legacy ? typeof(DLManagedTensor) : typeof(DLManagedTensorVersioned), "Deleter");
            var counter = new Counter { Tensor = tensor, Original = Marshal.ReadIntPtr(tensor, offset) };
            lock (Interposed)
                Interposed.Add(counter);
            Marshal.WriteIntPtr(tensor, offset, CountingPtr);
            return counter;
        }

        /// <summary>A float64 tensor in native memory holding 0, 1, 2, ..., freed (and counted) by its deleter.</summary>
        static unsafe IntPtr NativeTensor(out Counter counter, params long[] shape)
        {
            long count = shape.Aggregate(1L, (a, b) => a * b);
            int header = sizeof(DLManagedTensorVersioned);
            IntPtr ptr = Marshal.AllocHGlobal(header + 8 * shape.Length + 8 * (int)count);
            var t = (DLManagedTensorVersioned*)ptr;
            var dims = (long*)(ptr + header);
            var values = (double*)(ptr + header + 8 * shape.Length);
            for (int i = 0; i < shape.Length; ++i)
                dims[i] = shape[i];
            for (int i = 0; i < count; ++i)
                values[i] = i;
            *t = new DLManagedTensorVersioned
            {
                Version = new DLPackVersion { Major = 1, Minor = 0 },
                Deleter = FreeOwnedPtr,
                DLTensor = new DLTensor
                {
                    Data = (IntPtr)values,
                    Device = new DLDevice(DLDeviceType.Cpu, 0),
                    NDim = shape.Length,
                    DType = DLDataType.Of(DType.Float64),
                    Shape = (IntPtr)dims,
                },
            };
            counter = CountDeletes(ptr, false);
            return ptr;
        }

        // ---- the mirror ----------------------------------------------------------------------------

        static readonly Dictionary<string, string> FieldNames = new Dictionary<string, string>
        {
            { "major", "Major" }, { "minor", "Minor" }, { "device_type", "DeviceType" }, { "device_id", "DeviceId" },
            { "code", "Code" }, { "bits", "Bits" }, { "lanes", "Lanes" }, { "data", "Data" }, { "device", "Device" },
            { "ndim", "NDim" }, { "dtype", "DType" }, { "shape", "Shape" }, { "strides", "Strides" },
            { "byte_offset", "ByteOffset" }, { "dl_tensor", "DLTensor" }, { "manager_ctx", "ManagerCtx" },
            { "deleter", "Deleter" }, { "version", "Version" }, { "flags", "Flags" },
        };

        static readonly Dictionary<string, long> Constants = new Dictionary<string, long>
        {
            { "kDLCPU", (long)DLDeviceType.Cpu }, { "kDLCUDA", (long)DLDeviceType.Cuda },
            { "kDLCUDAHost", (long)DLDeviceType.CudaHost }, { "kDLCUDAManaged", (long)DLDeviceType.CudaManaged },
            { "kDLInt", (long)DLDataTypeCode.Int }, { "kDLUInt", (long)DLDataTypeCode.UInt },
            { "kDLFloat", (long)DLDataTypeCode.Float }, { "kDLBfloat", (long)DLDataTypeCode.Bfloat },
            { "kDLBool", (long)DLDataTypeCode.Bool },
            { "DLPACK_FLAG_BITMASK_READ_ONLY", (long)DLPackFlags.ReadOnly },
            { "DLPACK_FLAG_BITMASK_IS_COPIED", (long)DLPackFlags.IsCopied },
            { "DLPACK_MAJOR_VERSION", 1 },
        };

        static long SizeOf(Type type)
        {
            return Marshal.SizeOf(type.IsEnum ? Enum.GetUnderlyingType(type) : type);
        }

        [Test]
        public unsafe void MirrorMatchesTheCHeader()
        {
            string path = Environment.GetEnvironmentVariable("CBLOB_DLPACK_LAYOUT");
            if (string.IsNullOrEmpty(path))
                Assert.Ignore("CBLOB_DLPACK_LAYOUT is not set (test.sh compiles bindings/dlpack_layout.c and sets it)");
            var checkedFields = new HashSet<string>();
            foreach (string line in File.ReadAllLines(path))
            {
                string[] words = line.Split(' ');
                long c = long.Parse(words[1]);
                string[] name = words[0].Split('.');
                long mirror;
                if (name.Length == 1)
                {
                    mirror = Constants[name[0]];
                }
                else
                {
                    Type type = typeof(DLTensor).Assembly.GetType("CBlob." + name[0], true);
                    if (name[1] == "size")
                    {
                        mirror = Marshal.SizeOf(type);
                    }
                    else
                    {
                        string field = FieldNames[name[1]];
                        checkedFields.Add(type.Name + "." + field);
                        mirror = name.Length == 3 ? SizeOf(type.GetField(field).FieldType) : (long)Marshal.OffsetOf(type, field);
                    }
                }
                Assert.AreEqual(c, mirror, line);
            }
            // Every field of the mirror was checked, and the unsafe layout is the marshalled one.
            foreach (Type type in new[] { typeof(DLPackVersion), typeof(DLDevice), typeof(DLDataType), typeof(DLTensor), typeof(DLManagedTensor), typeof(DLManagedTensorVersioned) })
                foreach (var f in type.GetFields(System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.Instance))
                    Assert.IsTrue(checkedFields.Contains(type.Name + "." + f.Name), type.Name + "." + f.Name + " unchecked");
            Assert.AreEqual(Marshal.SizeOf(typeof(DLTensor)), sizeof(DLTensor));
            Assert.AreEqual(Marshal.SizeOf(typeof(DLManagedTensor)), sizeof(DLManagedTensor));
            Assert.AreEqual(Marshal.SizeOf(typeof(DLManagedTensorVersioned)), sizeof(DLManagedTensorVersioned));
            DLManagedTensorVersioned v;
            Assert.AreEqual((long)Marshal.OffsetOf(typeof(DLManagedTensorVersioned), "Flags"), (byte*)&v.Flags - (byte*)&v);
            Assert.AreEqual((long)Marshal.OffsetOf(typeof(DLManagedTensorVersioned), "DLTensor"), (byte*)&v.DLTensor - (byte*)&v);
            Assert.AreEqual((long)Marshal.OffsetOf(typeof(DLTensor), "ByteOffset"), (byte*)&v.DLTensor.ByteOffset - (byte*)&v.DLTensor);
        }

        // ---- export and import ---------------------------------------------------------------------

        [Test]
        public void RoundTripSharesMemory()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f, 3f, 4f, 5f, 6f }, 2, 3))
            {
                var tensor = blob.ToDlpack(Part.Data, Memory.Host, readOnly: false);
                CollectionAssert.AreEqual(new long[] { 2, 3 }, tensor.Shape);
                Assert.AreEqual(2, tensor.NDim);
                Assert.IsNull(tensor.Strides);
                Assert.AreEqual(0UL, tensor.ByteOffset);
                Assert.AreEqual(new DLDevice(DLDeviceType.Cpu, 0), tensor.Device);
                Assert.AreEqual(new DLDataType(DLDataTypeCode.Float, 32, 1), tensor.DType);
                Assert.AreEqual(DType.Float32, tensor.DType.DType);
                Assert.AreEqual(1u, tensor.Version.Major);
                Assert.AreEqual(DLPackFlags.None, tensor.Flags);
                Assert.IsFalse(tensor.IsReadOnly);
                Span<float> values = tensor.AsSpan<float>();
                values[1] = 20f;
                Assert.AreEqual(20f, blob.ToArray<float>()[1], "the tensor views the blob's own memory");

                using (var back = Blob.FromDlpack(ctx, tensor))
                {
                    Assert.IsFalse(tensor.IsOwned, "cblob owns the tensor now");
                    Assert.Throws<ObjectDisposedException>(() => { var s = tensor.Shape; });
                    tensor.Dispose(); // does nothing
                    CollectionAssert.AreEqual(new long[] { 2, 3 }, back.Shape);
                    Span<float> imported = back.GetMutableData<float>();
                    imported[4] = 50f;
                    CollectionAssert.AreEqual(new[] { 1f, 20f, 3f, 4f, 50f, 6f }, blob.ToArray<float>(), "written through the import");
                    Span<float> original = blob.GetMutableData<float>();
                    original[0] = -1f;
                    Assert.AreEqual(-1.0, back.ReadElement(Part.Data, 0, 0), "written through the original");
                    CollectionAssert.AreEqual(new float[6], back.ToArray<float>(Part.Diff), "the import's own diff");
                    blob.Dispose();
                    Assert.AreEqual(50f, back.ToArray<float>()[4], "the memory outlives the original");
                }
            }
        }

        [Test]
        public void DeleterRunsOnceOnDispose()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f }, 2))
            {
                var tensor = blob.ToDlpack(readOnly: true);
                var counter = CountDeletes(tensor);
                // The tensor holds the buffer: replacing it in place is refused until the deleter runs.
                Throws(Status.State, () => blob.SetCpuData(new[] { 5f, 6f }));
                Assert.AreEqual(0, counter.Deletes);
                tensor.Dispose();
                tensor.Dispose();
                Assert.AreEqual(1, counter.Deletes, "after two Disposes");
                Assert.Throws<ObjectDisposedException>(() => { var d = tensor.Data; });
                blob.SetCpuData(new[] { 5f, 6f });
                blob.CopyIn(new[] { 5f, 6f });

                // The tensor outlives its blob and keeps the values it viewed.
                tensor = blob.ToDlpack(readOnly: true);
                counter = CountDeletes(tensor);
                blob.Dispose();
                CollectionAssert.AreEqual(new[] { 5f, 6f }, tensor.AsReadOnlySpan<float>().ToArray());
                tensor.Dispose();
                Assert.AreEqual(1, counter.Deletes);
            }
        }

        static Counter ForgottenExport(Blob blob)
        {
            return CountDeletes(blob.ToDlpack(readOnly: true));
        }

        [Test]
        public void FinalizerDeletesAForgottenTensor()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f }, 2))
            {
                Counter counter = ForgottenExport(blob);
                for (int i = 0; i < 20 && counter.Deletes == 0; ++i)
                {
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                }
                Assert.AreEqual(1, counter.Deletes, "the finalizer ran the deleter once");
            }
        }

        [Test]
        public void DeleterRunsOnceWhenHandedOver()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f, 3f }, 3))
            {
                // To a consumer, which calls the deleter itself.
                var tensor = blob.ToDlpack();
                var counter = CountDeletes(tensor);
                IntPtr raw = tensor.Release();
                Assert.AreNotEqual(IntPtr.Zero, raw);
                Assert.AreEqual(IntPtr.Zero, tensor.Release());
                tensor.Dispose();
                Assert.AreEqual(0, counter.Deletes, "after Release and Dispose");
                // The consumer's call, through the tensor's deleter field.
                IntPtr deleter = Marshal.ReadIntPtr(raw, (int)Marshal.OffsetOf(typeof(DLManagedTensorVersioned), "Deleter"));
                ((DeleterFn)Marshal.GetDelegateForFunctionPointer(deleter, typeof(DeleterFn)))(raw);
                Assert.AreEqual(1, counter.Deletes);

                // To cblob, which deletes it when the imported blob lets go.
                tensor = blob.ToDlpack();
                counter = CountDeletes(tensor);
                using (var sharer = new Blob(ctx, DType.Float32, 3))
                {
                    using (var back = Blob.FromDlpack(ctx, tensor))
                    {
                        Assert.AreEqual(0, counter.Deletes);
                        sharer.ShareData(back);
                    }
                    Assert.AreEqual(0, counter.Deletes, "a blob sharing the memory still holds it");
                    CollectionAssert.AreEqual(new[] { 1f, 2f, 3f }, sharer.ToArray<float>());
                }
                Assert.AreEqual(1, counter.Deletes);
            }

            // A tensor without elements is deleted before the import returns.
            using (var empty = new Blob(ctx, DType.Int32, 0, 4))
            {
                var tensor = empty.ToDlpack();
                Assert.AreEqual(IntPtr.Zero, tensor.Data);
                CollectionAssert.AreEqual(new long[] { 0, 4 }, tensor.Shape);
                var counter = CountDeletes(tensor);
                using (var back = Blob.FromDlpack(ctx, tensor))
                {
                    Assert.AreEqual(1, counter.Deletes);
                    Assert.AreEqual(DType.Int32, back.DType);
                }
            }
        }

        [Test]
        public void LegacyTensors()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f, 3f, 4f }, 2, 1, 2))
            {
                var tensor = blob.ToDlpackLegacy();
                CollectionAssert.AreEqual(new long[] { 2, 1, 2 }, tensor.Shape);
                Assert.AreEqual(DLDeviceType.Cpu, tensor.Device.DeviceType);
                Assert.IsFalse(tensor.IsReadOnly);
                Span<float> values = tensor.AsSpan<float>();
                values[3] = 40f;
                CollectionAssert.AreEqual(new[] { 1f, 2f, 3f, 40f }, blob.ToArray<float>());
                var counter = CountDeletes(tensor);
                using (var back = Blob.FromDlpackLegacy(ctx, tensor))
                {
                    CollectionAssert.AreEqual(new[] { 1f, 2f, 3f, 40f }, back.ToArray<float>());
                    Assert.AreEqual(0, counter.Deletes);
                }
                Assert.AreEqual(1, counter.Deletes);

                using (var diff = blob.ToDlpackLegacy(Part.Diff))
                {
                    counter = CountDeletes(diff);
                }
                Assert.AreEqual(1, counter.Deletes);
            }
        }

        [Test]
        public unsafe void ARefusedImportLeavesTheTensorWithTheCaller()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f, 3f, 4f }, 2, 2))
            {
                var tensor = blob.ToDlpack();
                var counter = CountDeletes(tensor);
                ((DLManagedTensorVersioned*)tensor.Pointer)->DLTensor.DType = new DLDataType(DLDataTypeCode.Bfloat, 16, 1);
                var e = Throws(Status.DType, () => Blob.FromDlpack(ctx, tensor));
                StringAssert.StartsWith("cblob_blob_from_dlpack: ", e.LibraryMessage);
                Assert.AreEqual(0, counter.Deletes, "the deleter is not run");
                Assert.IsTrue(tensor.IsOwned, "the tensor is the caller's again");
                Assert.IsNull(tensor.DType.DType);
                ((DLManagedTensorVersioned*)tensor.Pointer)->DLTensor.DType = new DLDataType(DLDataTypeCode.Float, 32, 2);
                Throws(Status.DType, () => Blob.FromDlpack(ctx, tensor));
                tensor.Dispose();
                Assert.AreEqual(1, counter.Deletes, "deleted once, by the caller's Dispose");
                Assert.Throws<ObjectDisposedException>(() => Blob.FromDlpack(ctx, tensor));
                Assert.Throws<ArgumentNullException>(() => Blob.FromDlpack(ctx, null));

                // Strides that are not row-major, through the legacy call.
                var legacy = blob.ToDlpackLegacy();
                counter = CountDeletes(legacy);
                long* strides = stackalloc long[2];
                strides[0] = 1;
                strides[1] = 2; // column-major
                ((DLManagedTensor*)legacy.Pointer)->DLTensor.Strides = (IntPtr)strides;
                Throws(Status.Shape, () => Blob.FromDlpackLegacy(ctx, legacy));
                CollectionAssert.AreEqual(new long[] { 1, 2 }, legacy.Strides);
                Throws(Status.InvalidArgument, () => legacy.AsSpan<float>());
                ((DLManagedTensor*)legacy.Pointer)->DLTensor.Strides = IntPtr.Zero;
                using (var back = Blob.FromDlpackLegacy(ctx, legacy))
                    CollectionAssert.AreEqual(new[] { 1f, 2f, 3f, 4f }, back.ToArray<float>());
                Assert.AreEqual(1, counter.Deletes);
            }
        }

        [Test]
        public void TheReadOnlyFlag()
        {
            using (var blob = FloatBlob(new[] { 7f, 8f }, 2))
            {
                var tensor = blob.ToDlpack(readOnly: true);
                Assert.IsTrue(tensor.IsReadOnly);
                Assert.AreEqual(DLPackFlags.ReadOnly, tensor.Flags & DLPackFlags.ReadOnly);
                CollectionAssert.AreEqual(new[] { 7f, 8f }, tensor.AsReadOnlySpan<float>().ToArray());
                Throws(Status.State, () => tensor.AsSpan<float>());
                Throws(Status.DType, () => tensor.AsReadOnlySpan<int>());
                // cblob refuses to import a read-only tensor: every blob can be written.
                var counter = CountDeletes(tensor);
                var e = Throws(Status.InvalidArgument, () => Blob.FromDlpack(ctx, tensor));
                StringAssert.Contains("read-only", e.LibraryMessage);
                tensor.Dispose();
                Assert.AreEqual(1, counter.Deletes);

                using (var writable = blob.ToDlpack(readOnly: false))
                {
                    Assert.IsFalse(writable.IsReadOnly);
                    Assert.AreEqual(DLPackFlags.None, writable.Flags);
                    Span<float> values = writable.AsSpan<float>();
                    values[1] = 80f;
                    CollectionAssert.AreEqual(new[] { 7f, 80f }, blob.ToArray<float>());
                }
            }
        }

        [Test]
        public void ATensorMadeInCSharp()
        {
            Counter counter;
            using (var blob = Blob.FromDlpack(ctx, new DlpackTensor(NativeTensor(out counter, 2, 3))))
            {
                Assert.AreEqual(DType.Float64, blob.DType);
                CollectionAssert.AreEqual(new long[] { 2, 3 }, blob.Shape);
                CollectionAssert.AreEqual(new[] { 0.0, 1, 2, 3, 4, 5 }, blob.ToArray<double>());
                blob.Scale(2, Part.Data);
                Assert.AreEqual(30.0, blob.Asum());
                Assert.AreEqual(0, counter.Deletes);
            }
            Assert.AreEqual(1, counter.Deletes, "cblob ran the producer's deleter once");

            // A major version cblob does not read: refused; only the deleter is touched, by Dispose.
            using (var tensor = new DlpackTensor(NativeTensor(out counter, 4)))
            {
                unsafe { ((DLManagedTensorVersioned*)tensor.Pointer)->Version.Major = 2; }
                Throws(Status.InvalidArgument, () => Blob.FromDlpack(ctx, tensor));
                Assert.AreEqual(0, counter.Deletes);
            }
            Assert.AreEqual(1, counter.Deletes);
            Assert.Throws<ArgumentException>(() => new DlpackTensor(IntPtr.Zero));
        }

        [Test]
        public void TensorsAreDeletedFromAnyThread()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f }, 2))
            {
                var tensor = blob.ToDlpack(readOnly: true);
                var counter = CountDeletes(tensor);
                blob.Dispose();
                var thread = new Thread(() => tensor.Dispose());
                thread.Start();
                thread.Join();
                Assert.AreEqual(1, counter.Deletes);
            }
        }

        [Test]
        public void DataTypes()
        {
            foreach (DType d in new[] { DType.Float32, DType.Float64, DType.Int32, DType.Uint32 })
                Assert.AreEqual(d, DLDataType.Of(d).DType);
            Assert.AreEqual(new DLDataType(DLDataTypeCode.UInt, 32, 1), DLDataType.Of(DType.Uint32));
        }

        [Test]
        public unsafe void ImportOnAStream()
        {
            using (var blob = FloatBlob(new[] { 1f, 2f, 3f, 4f }, 2, 2))
            {
                // A host tensor must be ready when handed over: the stream is not used, zero or not.
                foreach (IntPtr stream in new[] { IntPtr.Zero, new IntPtr(2) })
                {
                    using (var back = Blob.FromDlpackOnStream(ctx, blob.ToDlpack(), stream))
                    {
                        Span<float> imported = back.GetMutableData<float>();
                        imported[1] = 20f;
                    }
                    CollectionAssert.AreEqual(new[] { 1f, 20f, 3f, 4f }, blob.ToArray<float>(), "written through the import");
                    using (var back = Blob.FromDlpackLegacyOnStream(ctx, blob.ToDlpackLegacy(), stream))
                        CollectionAssert.AreEqual(new[] { 1f, 20f, 3f, 4f }, back.ToArray<float>());
                }
                // The import's rules hold on a stream too: a refused tensor stays the caller's.
                var tensor = blob.ToDlpack();
                var counter = CountDeletes(tensor);
                ((DLManagedTensorVersioned*)tensor.Pointer)->DLTensor.DType = new DLDataType(DLDataTypeCode.Bfloat, 16, 1);
                var e = Throws(Status.DType, () => Blob.FromDlpackOnStream(ctx, tensor, IntPtr.Zero));
                StringAssert.StartsWith("cblob_blob_from_dlpack_on_stream: ", e.LibraryMessage);
                Assert.AreEqual(0, counter.Deletes, "the deleter is not run");
                Assert.IsTrue(tensor.IsOwned, "the tensor is the caller's again");
                tensor.Dispose();
                Assert.AreEqual(1, counter.Deletes);
            }
        }
    }
}
