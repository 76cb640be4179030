// SPDX-License-Identifier: BSD-2-Clause
// Arenas, and communicators in one process (a world of one rank: MPI's singleton start): bad
// input throws and changes nothing. The collectives on two ranks are MpiTwoRanks/, which test.sh
// runs under mpirun. NUnit 2.6.
using System;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class CommTests : ContextFixture
    {
        Blob Floats(Part part, params float[] values)
        {
            var blob = new Blob(ctx, DType.Float32, values.Length);
            values.AsSpan().CopyTo(blob.GetMutableView<float>(part));
            return blob;
        }

        /// <summary>A world of one rank, or the test ignored with the reason libcblob_mpi is missing.</summary>
        Comm World()
        {
            string missing = Environment.GetEnvironmentVariable("CBLOB_MPI_MISSING");
            if (!string.IsNullOrEmpty(missing))
                Assert.Ignore("libcblob_mpi is not built: " + missing);
            try
            {
                return Comm.MpiWorld(ctx);
            }
            catch (CBlobException e) when (e.Status == Status.State && e.Message.Contains("cannot load"))
            {
                Assert.Ignore(e.Message);
                throw;
            }
        }

        static void ThrowsFrom(Status status, string function, TestDelegate call)
        {
            var e = Throws(status, call);
            StringAssert.StartsWith(function, e.LibraryMessage);
        }

        [Test]
        public void AnArenaHoldsItsMembersValues()
        {
            var a = Floats(Part.Data, 0, 1, 2, 3, 4, 5);
            var b = Floats(Part.Data, 9, 9, 9, 9, 9);
            using (var arena = Blob.CreateArena(Part.Data, 64, a, b))
            {
                Assert.AreEqual(32, arena.Count);
                var all = arena.ToArray<float>();
                Assert.AreEqual(5f, all[5]);
                Assert.AreEqual(0f, all[6], "padding");
                Assert.AreEqual(9f, all[16]);
                var mine = a.GetMutableData<float>();
                mine[0] = 42;
                a.Dispose();
                b.Dispose(); // the arena holds its members
                Assert.AreEqual(42f, arena.ToArray<float>()[0]);
            }
        }

        [Test]
        public void ArenaErrorsChangeNothing()
        {
            ThrowsFrom(Status.InvalidArgument, "cblob_arena_create", () => Blob.CreateArena(Part.Diff, 64));
            using (var a = Floats(Part.Diff, 3, 3, 3))
            using (var d = new Blob(ctx, DType.Float64, 3))
            {
                ThrowsFrom(Status.DType, "cblob_arena_create", () => Blob.CreateArena(Part.Diff, 64, a, d));
                ThrowsFrom(Status.InvalidArgument, "cblob_arena_create", () => Blob.CreateArena((Part)7, 64, a));
                ThrowsFrom(Status.InvalidArgument, "cblob_arena_create", () => Blob.CreateArena(Part.Diff, 96, a));
                CollectionAssert.AreEqual(new[] { 3f, 3f, 3f }, a.ToArray<float>(Part.Diff));
            }
            Assert.Throws<ArgumentNullException>(() => Blob.CreateArena(Part.Diff, 64, (Blob)null));
        }

        [Test]
        public void AWorldOfOneRankRefusesBadCollectivesAndStaysUsable()
        {
            using (var comm = World())
            using (var ints = new Blob(ctx, DType.Int32, 4))
            using (var p = Floats(Part.Diff, 1, 2, 3))
            {
                Assert.AreEqual(0, comm.Rank);
                Assert.AreEqual(1, comm.Size);
                ints.Fill(1);
                ThrowsFrom(Status.DType, "cblob_comm_allreduce", () => comm.Allreduce(Part.Data, ReduceOp.Average, ints));
                ThrowsFrom(Status.OutOfRange, "cblob_comm_broadcast", () => comm.Broadcast(Part.Data, 1, ints));
                ThrowsFrom(Status.InvalidArgument, "cblob_comm_allreduce", () => comm.Allreduce(Part.Data, ReduceOp.Sum, ints, ints));
                ThrowsFrom(Status.InvalidArgument, "cblob_comm_set_bucket_bytes", () => comm.SetBucketBytes(-1));
                Assert.Throws<ArgumentOutOfRangeException>(() => comm.SetTimeout(TimeSpan.FromSeconds(-1)));
                using (var arena = Blob.CreateArena(Part.Diff, 64, p))
                {
                    ThrowsFrom(Status.InvalidArgument, "cblob_comm_allreduce", () => comm.Allreduce(Part.Diff, ReduceOp.Sum, arena, p));
                    // Still usable; an empty list is a collective of nothing.
                    comm.SetTimeout(TimeSpan.FromSeconds(30));
                    comm.Allreduce(Part.Data, ReduceOp.Sum, ints);
                    comm.Allreduce(Part.Data, ReduceOp.Sum);
                    comm.Allreduce(Part.Diff, ReduceOp.Average, arena);
                    using (var request = comm.AllreduceStart(Part.Diff, ReduceOp.Sum, arena))
                    {
                        request.Wait();
                        request.Wait();
                    }
                    comm.BarrierStart().Dispose();
                    CollectionAssert.AreEqual(new[] { 1, 1, 1, 1 }, ints.ToArray<int>());
                    CollectionAssert.AreEqual(new[] { 1f, 2f, 3f }, p.ToArray<float>(Part.Diff));
                }
                StringAssert.Contains("rank 0 of 1", comm.ToString());
                comm.Dispose();
                Assert.Throws<ObjectDisposedException>(() => comm.Barrier());
            }
        }

        [Test]
        public void NcclWithoutAGpuSaysWhy()
        {
            if (Environment.GetEnvironmentVariable("CBLOB_BINDINGS_EXPECT_GPU") == "1")
                Assert.Ignore("a GPU (or its test double) is expected here");
            var e = Assert.Throws<CBlobException>(() => Comm.NcclUniqueId());
            Assert.IsTrue(e.IsNoGpu || e.Status == Status.NcclMissing, e.Message);
            StringAssert.StartsWith("cblob_comm_nccl_unique_id", e.LibraryMessage);
            e = Assert.Throws<CBlobException>(() => Comm.Nccl(ctx, new byte[Constants.NcclUniqueIdBytes], 1, 0));
            Assert.IsTrue(e.IsNoGpu || e.Status == Status.NcclMissing, e.Message);
            Assert.Throws<ArgumentException>(() => Comm.Nccl(ctx, new byte[5], 1, 0));
        }
    }
}
