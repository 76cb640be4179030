// SPDX-License-Identifier: BSD-2-Clause
// Times one cheap cblob call (Blob.Count through CBlob.dll) against an empty C call, both from
// C# on Mono, and a raw P/Invoke of cblob_blob_count (no call guard, no status check) for the
// breakdown; prints "RESULT csharp <empty ns> <raw ns> <count ns>".
using System;
using System.Diagnostics;
using System.Runtime.InteropServices;
using CBlob;

static class Bench
{
    [DllImport("libbench_ffi.so", CallingConvention = CallingConvention.Cdecl)]
    static extern void bench_ffi_empty();

    [DllImport("libcblob.so.1", CallingConvention = CallingConvention.Cdecl)]
    static extern Status cblob_blob_count(IntPtr blob, out long count);

    static double BestNs(int batches, int calls, Action f)
    {
        double best = double.PositiveInfinity;
        for (int b = 0; b < batches; b++)
        {
            var watch = Stopwatch.StartNew();
            f();
            best = Math.Min(best, watch.Elapsed.TotalMilliseconds * 1e6 / calls);
        }
        return best;
    }

    static int Main(string[] args)
    {
        bool quick = args.Length > 0 && args[0] == "--quick";
        int rounds = quick ? 2 : 5, batches = quick ? 3 : 10, calls = quick ? 20000 : 200000;
        long sink = 0;
        using (var ctx = new Context())
        using (var blob = new Blob(ctx, DType.Float32, 2, 3, 4))
        {
            double empty = double.PositiveInfinity, raw = double.PositiveInfinity, count = double.PositiveInfinity;
            IntPtr handle = blob.Handle.DangerousGetHandle(); // blob stays alive: the using block
            // The loops live in the lambdas, so each batch costs one delegate call, not one per call.
            Action emptyLoop = () => { for (int i = 0; i < calls; i++) bench_ffi_empty(); };
            Action rawLoop = () => { for (int i = 0; i < calls; i++) { long n; cblob_blob_count(handle, out n); sink += n; } };
            Action countLoop = () => { for (int i = 0; i < calls; i++) sink += blob.Count; };
            // Alternating rounds, so that a noisy neighbour slows both sides alike.
            for (int r = 0; r < rounds; r++)
            {
                empty = Math.Min(empty, BestNs(batches, calls, emptyLoop));
                raw = Math.Min(raw, BestNs(batches, calls, rawLoop));
                count = Math.Min(count, BestNs(batches, calls, countLoop));
            }
            if (sink == 0)
                return 1;
            Console.WriteLine("RESULT csharp {0:F2} {1:F2} {2:F2}", empty, raw, count);
        }
        return 0;
    }
}
