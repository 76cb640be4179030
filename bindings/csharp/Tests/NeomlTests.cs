// SPDX-License-Identifier: BSD-2-Clause
// NeoML's blob operations through the C# layer: the named layout, typed copies, conversions,
// transposes, merges and splits, fills, windows and mapped buffers.
using System;
using System.Linq;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class NeomlTests : ContextFixture
    {
        static float[] Iota(int n)
        {
            return Enumerable.Range(0, n).Select(i => (float)i).ToArray();
        }

        Blob Filled(float[] values, params long[] shape)
        {
            var b = new Blob(ctx, DType.Float32, shape);
            b.CopyIn(values);
            return b;
        }

        [Test]
        public void LayoutCreatorsAndGetters()
        {
            using (var t = Blob.CreateTensor(ctx, DType.Float32, 2, 3))
            using (var v = Blob.CreateVector(ctx, DType.Int32, 5))
            using (var m = Blob.CreateMatrix(ctx, DType.Float64, 2, 4))
            using (var d = Blob.CreateData(ctx, DType.Float32, 2, 3, 4))
            using (var l = Blob.CreateList(ctx, DType.Float32, 2, 3, 5, 4))
            using (var image = Blob.CreateImage2D(ctx, DType.Uint32, 1, 2, 3, 4, 5))
            using (var volume = Blob.CreateImage3D(ctx, DType.Float32, 1, 2, 3, 4, 5, 6))
            using (var like = volume.CreateLike(DType.Float64))
            using (var plain = new Blob(ctx, DType.Float32, 2, 6))
            {
                CollectionAssert.AreEqual(new long[] { 2, 3, 1, 1, 1, 1, 1 }, t.Shape);
                CollectionAssert.AreEqual(new long[] { 5, 1, 1, 1, 1, 1, 1 }, v.Shape);
                CollectionAssert.AreEqual(new long[] { 2, 4, 1, 1, 1, 1, 1 }, m.Shape);
                CollectionAssert.AreEqual(new long[] { 2, 3, 1, 1, 1, 1, 4 }, d.Shape);
                CollectionAssert.AreEqual(new long[] { 2, 3, 5, 1, 1, 1, 4 }, l.Shape);
                CollectionAssert.AreEqual(new long[] { 1, 2, 1, 3, 4, 1, 5 }, image.Shape);
                Assert.AreEqual(5, volume.GetDim(Dim.Depth));
                Assert.AreEqual(new long[] { 2, 360, 60 }, new[] { volume.ObjectCount, volume.ObjectSize, volume.GeometricalSize });
                Assert.AreEqual(DType.Float64, like.DType);
                Assert.IsTrue(like.HasEqualShape(volume));
                Assert.IsTrue(like.HasEqualDims(volume, 0, 6));
                Throws(Status.OutOfRange, () => like.HasEqualDims(volume, 9));
                StringAssert.StartsWith("cblob_blob_dim: ", Throws(Status.Shape, () => plain.GetDim(Dim.Height)).LibraryMessage);
                Throws(Status.Shape, () => Blob.CreateMatrix(ctx, DType.Float32, -1, 2));
                plain.Reinterpret(3, 4);
                CollectionAssert.AreEqual(new long[] { 3, 4 }, plain.Shape);
                Throws(Status.Shape, () => plain.Reinterpret(5));
            }
        }

        [Test]
        public void TypedCopiesConversionsAndTransposes()
        {
            using (var a = Filled(new[] { 0.5f, 1.5f, -2.5f, 1e10f, -1e10f, float.NaN }, 2, 3))
            using (var back = new Blob(ctx, DType.Float64, 2, 3))
            using (var m = Filled(Iota(6), 2, 3))
            using (var u = new Blob(ctx, DType.Float32, 3, 2))
            {
                Throws(Status.DType, () => a.CopyIn(new double[6]));
                Throws(Status.Shape, () => a.CopyIn(new float[5]));
                Throws(Status.Shape, () => a.CopyOut(new float[7]));
                Throws(Status.DType, () => a.CopyIn(new long[6]));
                var outArray = new float[6];
                a.CopyOut(outArray);
                Assert.AreEqual(-2.5f, outArray[2]);
                using (var ints = a.Clone(DType.Int32))
                {
                    CollectionAssert.AreEqual(new[] { 0, 2, -2, int.MaxValue, int.MinValue, 0 }, ints.ToArray<int>());
                    back.ConvertFrom(ints);
                    Assert.AreEqual(2.0, back.ReadElement(Part.Data, 0, 1));
                    ints.ConvertFromTruncating(a);
                    CollectionAssert.AreEqual(new[] { 0, 1, -2, int.MaxValue, int.MinValue, 0 }, ints.ToArray<int>());
                }
                using (var copy = a.DeepCopy())
                {
                    copy.Fill(1);
                    Assert.AreEqual(0.5, a.ReadElement(Part.Data, 0, 0), "a deep copy is independent");
                }
                using (var t = m.Transposed(0, -1))
                {
                    CollectionAssert.AreEqual(new[] { 0f, 3f, 1f, 4f, 2f, 5f }, t.ToArray<float>());
                    u.TransposeFrom(m, Part.Data, 1, 0);
                    CollectionAssert.AreEqual(t.ToArray<float>(), u.ToArray<float>());
                }
                Throws(Status.Shape, () => u.TransposeFrom(m, Part.Data, 0, 0));
            }
        }

        [Test]
        public void MergeSplitFillAndAdd()
        {
            using (var top = Filled(new[] { 1f, 2f, 3f }, 1, 3))
            using (var bottom = Filled(new[] { 4f, 5f, 6f, 7f, 8f, 9f }, 2, 3))
            using (var whole = new Blob(ctx, DType.Float32, 3, 3))
            using (var left = new Blob(ctx, DType.Float32, 3, 1))
            using (var right = new Blob(ctx, DType.Float32, 3, 2))
            using (var objects = Blob.CreateData(ctx, DType.Float32, 1, 2, 3))
            using (var first = Blob.CreateData(ctx, DType.Float32, 1, 2, 1))
            using (var second = Blob.CreateData(ctx, DType.Float32, 1, 2, 2))
            using (var joined = objects.CreateLike(DType.Float32))
            using (var ints = new Blob(ctx, DType.Int32, 2))
            {
                whole.Merge(Part.Data, 0, top, bottom);
                CollectionAssert.AreEqual(Enumerable.Range(1, 9).Select(i => (float)i), whole.ToArray<float>());
                Throws(Status.Shape, () => whole.Merge(Part.Data, 0, top, top));
                whole.Split(Part.Data, 1, left, right);
                CollectionAssert.AreEqual(new[] { 1f, 4f, 7f }, left.ToArray<float>());
                Assert.Throws<ArgumentNullException>(() => whole.Split(Part.Data, 1, left, null));

                objects.CopyIn(Iota(6));
                objects.SplitObjects(Part.Data, first, second);
                CollectionAssert.AreEqual(new[] { 0f, 3f }, first.ToArray<float>());
                joined.MergeObjects(Part.Data, first, second);
                CollectionAssert.AreEqual(Iota(6), joined.ToArray<float>());
                joined.FillObject(1, 2, Part.Diff);
                CollectionAssert.AreEqual(new[] { 0f, 0f, 0f, 2f, 2f, 2f }, joined.ToArray<float>(Part.Diff));
                joined.ClearObject(1, Part.Diff);
                Assert.AreEqual(0.0, joined.Asum(Part.Diff));
                Throws(Status.OutOfRange, () => joined.FillObject(2, 1, Part.Diff));
                joined.Add(joined); // a blob may be added to itself
                CollectionAssert.AreEqual(Iota(6).Select(x => 2 * x), joined.ToArray<float>());
                joined.Clear();
                Assert.AreEqual(0.0, joined.Asum());

                Throws(Status.InvalidArgument, () => ints.Fill(0.5));
                Throws(Status.Overflow, () => ints.Fill(1e10));
            }
        }

        [Test]
        public void WindowsViewTheirParent()
        {
            var parent = Filled(Iota(8), 4, 2);
            using (var w = parent.CreateWindow(2))
            {
                Assert.IsTrue(w.IsWindow);
                Assert.IsFalse(parent.IsWindow);
                w.ShiftWindow(1);
                CollectionAssert.AreEqual(new[] { 2f, 3f, 4f, 5f }, w.ToArray<float>());
                StringAssert.Contains("outside [0, 2]", Throws(Status.OutOfRange, () => w.SetWindowPosition(3)).LibraryMessage);
                Assert.AreEqual(1, w.WindowPosition, "a failed move changes nothing");
                w.SetWindowSize(3);
                Assert.AreEqual(3, w.WindowSize);
                w.Fill(-1);
                CollectionAssert.AreEqual(new[] { 0f, 1f, -1f, -1f, -1f, -1f, -1f, -1f }, parent.ToArray<float>());
                using (var inner = w.CreateWindow(1))
                using (var owner = inner.GetWindowOwner())
                using (var p = inner.GetWindowParent())
                {
                    Assert.IsTrue(p.IsWindow);
                    Assert.IsFalse(owner.IsWindow);
                    Assert.AreEqual(8, owner.Count);
                }
                // Disposing the parent frees nothing while a window of it lives.
                parent.Dispose();
                Assert.AreEqual(-1f, w.ToArray<float>()[5]);
                Assert.Throws<ObjectDisposedException>(() => parent.CreateWindow(1));
            }
        }

        [Test]
        public void MappedBuffersAreDisposable()
        {
            using (var b = new Blob(ctx, DType.Float32, 6))
            {
                using (var m = b.Map<float>(Part.Data, 1, 3))
                {
                    Assert.AreEqual(3, m.Length);
                    new[] { 1f, 2f, 3f }.AsSpan().CopyTo(m.Span);
                }
                CollectionAssert.AreEqual(new[] { 0f, 1f, 2f, 3f, 0f, 0f }, b.ToArray<float>());
                var mapping = b.Map<float>(Part.Data, 0, 6, Access.Read);
                Assert.AreEqual(3f, mapping.ReadOnlySpan[3]);
                Assert.Throws<NotSupportedException>(() => { var s = mapping.Span; });
                mapping.Dispose();
                mapping.Dispose();
                Assert.IsTrue(mapping.IsDisposed);
                Assert.Throws<ObjectDisposedException>(() => { var s = mapping.ReadOnlySpan; });

                StringAssert.StartsWith("cblob_blob_map: ", Throws(Status.OutOfRange, () => b.Map<float>(Part.Data, 4, 3)).LibraryMessage);
                Throws(Status.DType, () => b.Map<int>(Part.Data, 0, 1));

                // Last in, first out; the blob cannot change shape while mapped.
                var older = b.Map<float>(Part.Data, 0, 2, Access.Read);
                var newer = b.Map<float>(Part.Diff, 0, 2, Access.Write);
                Throws(Status.State, () => older.Dispose());
                Throws(Status.State, () => b.Reshape(7));
                var diff = newer.Span;
                diff[1] = 5;
                newer.Dispose();
                older.Dispose();
                Assert.AreEqual(5.0, b.Asum(Part.Diff));
            }
            // Disposing the blob ends its open mappings, newest first.
            var c = new Blob(ctx, DType.Float32, 4);
            var first = c.Map<float>(Part.Data, 0, 4, Access.Read);
            var second = c.Map<float>(Part.Data, 0, 1);
            c.Dispose();
            Assert.IsTrue(first.IsDisposed && second.IsDisposed);
        }
    }
}
