// SPDX-License-Identifier: BSD-2-Clause
// The collectives on two ranks: bindings/csharp/test.sh runs this program under mpirun -np 2
// (every rank runs it; a failed check exits non-zero, and mpirun with it). Each rank computes the
// serial reference of every collective from every rank's inputs, which it can make itself, and
// compares its result bit for bit: the results are then identical across ranks too.
using System;
using System.Linq;
using CBlob;

static class MpiTwoRanks
{
    /// <summary>Rank's values: exact in every dtype, distinct per rank, element and salt.</summary>
    static double[] Inputs(int rank, int n, int salt)
    {
        return Enumerable.Range(0, n).Select(i => ((i * 7 + rank * 1000 + salt * 31) % 977 - 400) / 8.0).ToArray();
    }

    static double[] SerialSum(int size, int n, int salt)
    {
        var sum = new double[n];
        for (int r = 0; r < size; r++)
        {
            var x = Inputs(r, n, salt);
            for (int i = 0; i < n; i++)
                sum[i] += x[i];
        }
        return sum;
    }

    static void Check(bool ok, string what)
    {
        if (!ok)
            throw new Exception("FAIL: " + what);
    }

    static Blob Floats(Context ctx, Part part, double[] values)
    {
        var blob = new Blob(ctx, DType.Float32, values.Length);
        values.Select(v => (float)v).ToArray().AsSpan().CopyTo(blob.GetMutableView<float>(part));
        return blob;
    }

    static void SameFloats(Blob blob, Part part, double[] want, float scale, string what)
    {
        var got = blob.ToArray<float>(part);
        Check(got.Length == want.Length, what + ": length");
        for (int i = 0; i < want.Length; i++)
            Check(BitConverter.SingleToInt32Bits(got[i]) == BitConverter.SingleToInt32Bits((float)want[i] * scale),
                  what + ": element " + i + " is " + got[i]);
    }

    static int Main()
    {
        try
        {
            using (var ctx = new Context())
            {
                using (var comm = Comm.MpiWorld(ctx))
                    Run(ctx, comm);
                using (var comm = Comm.MpiWorld(ctx))
                    Timeout(ctx, comm);
            }
            return 0;
        }
        catch (Exception e)
        {
            Console.Error.WriteLine(e);
            return 1;
        }
    }

    /// <summary>
    /// Rank 1 stays away from a collective: rank 0 times out, and its communicator is broken.
    /// Last: MPI keeps the collective rank 1 never joined.
    /// </summary>
    static void Timeout(Context ctx, Comm comm)
    {
        if (comm.Rank == 1)
            return;
        comm.SetTimeout(TimeSpan.FromMilliseconds(300));
        using (var blob = new Blob(ctx, DType.Float32, 8))
        {
            try
            {
                comm.Allreduce(Part.Data, ReduceOp.Sum, blob);
                Check(false, "a collective nobody joins returned");
            }
            catch (CBlobException e) when (e.Status == Status.Timeout)
            {
            }
        }
        try
        {
            comm.Barrier();
            Check(false, "a broken communicator made a barrier");
        }
        catch (CBlobException e) when (e.Status == Status.Comm)
        {
        }
        Comm.FinalizeMpi(); // before the communicator is disposed: MPI may still write into the blob
        Comm.FinalizeMpi(); // again: nothing to do
        Console.WriteLine("rank 0: a collective rank 1 never joins: Status.Timeout, then Status.Comm: ok");
    }

    static void Run(Context ctx, Comm comm)
    {
        int rank = comm.Rank, size = comm.Size;
        Check(size == 2, "run under mpirun -np 2");
        comm.SetTimeout(TimeSpan.FromMinutes(1));

        // One blob: the sum; a float64 blob: the average.
        var a = Floats(ctx, Part.Data, Inputs(rank, 1000, 1));
        comm.Allreduce(Part.Data, ReduceOp.Sum, a);
        SameFloats(a, Part.Data, SerialSum(size, 1000, 1), 1, "sum of one float32 blob");
        var d = new Blob(ctx, DType.Float64, 333);
        Inputs(rank, 333, 2).AsSpan().CopyTo(d.GetMutableData<double>());
        comm.Allreduce(Part.Data, ReduceOp.Average, d);
        var dv = d.ToArray<double>();
        var dw = SerialSum(size, 333, 2);
        for (int i = 0; i < dw.Length; i++)
            Check(BitConverter.DoubleToInt64Bits(dv[i]) == BitConverter.DoubleToInt64Bits(dw[i] * (1.0 / size)), "average of float64");

        // A fused list of mixed dtypes in small buckets, on the diff.
        comm.SetBucketBytes(256);
        Blob x = Floats(ctx, Part.Diff, Inputs(rank, 15, 3)), y = Floats(ctx, Part.Diff, Inputs(rank, 40, 4)), z = Floats(ctx, Part.Diff, Inputs(rank, 100, 6));
        var k = new Blob(ctx, DType.Int32, 7);
        Inputs(rank, 7, 5).Select(v => (int)(v * 8)).ToArray().AsSpan().CopyTo(k.GetMutableDiff<int>());
        comm.Allreduce(Part.Diff, ReduceOp.Sum, x, y, k, z);
        SameFloats(x, Part.Diff, SerialSum(size, 15, 3), 1, "fused x");
        SameFloats(y, Part.Diff, SerialSum(size, 40, 4), 1, "fused y");
        SameFloats(z, Part.Diff, SerialSum(size, 100, 6), 1, "fused z (alone)");
        Check(k.ToArray<int>(Part.Diff).SequenceEqual(SerialSum(size, 7, 5).Select(v => (int)(v * 8))), "fused int32");
        comm.SetBucketBytes(Constants.CommDefaultBucketBytes);

        // An arena of three blobs' diffs, averaged; then a member written afterwards.
        Blob p = Floats(ctx, Part.Diff, Inputs(rank, 12, 7)), q = Floats(ctx, Part.Diff, Inputs(rank, 17, 8)), r = Floats(ctx, Part.Diff, Inputs(rank, 8, 9));
        var grads = Blob.CreateArena(Part.Diff, 64, p, q, r);
        Check(grads.Count == 16 + 32 + 16, "64-byte slices");
        comm.Allreduce(Part.Diff, ReduceOp.Average, grads);
        SameFloats(p, Part.Diff, SerialSum(size, 12, 7), 1f / size, "arena member p");
        SameFloats(q, Part.Diff, SerialSum(size, 17, 8), 1f / size, "arena member q");
        SameFloats(r, Part.Diff, SerialSum(size, 8, 9), 1f / size, "arena member r");
        q.Fill(rank + 1, Part.Diff);
        comm.Allreduce(Part.Diff, ReduceOp.Sum, grads);
        Check(q.ToArray<float>(Part.Diff).All(v => v == 3), "member written after the arena");

        // Broadcast from the last rank.
        int root = size - 1;
        var b = Floats(ctx, Part.Data, Inputs(rank, 50, 10));
        comm.Broadcast(Part.Data, root, b);
        SameFloats(b, Part.Data, Inputs(root, 50, 10), 1, "broadcast");

        // Requests: waited, and disposed without a wait (which waits).
        var nb = Floats(ctx, Part.Data, Inputs(rank, 4096, 11));
        using (var request = comm.AllreduceStart(Part.Data, ReduceOp.Sum, nb))
            request.Wait();
        SameFloats(nb, Part.Data, SerialSum(size, 4096, 11), 1, "non-blocking sum");
        comm.BroadcastStart(Part.Data, 0, nb).Dispose();
        using (var barrier = comm.BarrierStart())
            barrier.Wait();
        comm.Barrier();
        Console.WriteLine("rank " + rank + ": all-reduce, average, fused list, arena, broadcast, requests: ok");
    }
}
