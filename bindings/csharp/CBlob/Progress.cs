// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): Context.SetProgress, whose function needs
// a delegate the library calls (cblob_progress_fn) and a table that keeps the caller's function.
using System;
using System.Collections.Generic;
using System.Threading;

namespace CBlob
{
    public sealed partial class Context
    {
        /// <summary>
        /// Sets the function told how far the context's calls that read or write files are, and
        /// asked whether they may go on (<c>null</c>: none, the default). Those are the saves and
        /// loads of blobs, blob vectors, models and files to and from paths
        /// (<c>Blob.SaveNpy</c>, <c>Net.OpenFile</c>, <c>File.Open</c>, ...), through the context
        /// of the handle they read into or write from.
        /// </summary>
        /// <remarks>
        /// <para><c>progress(done, total)</c>: <c>done</c> is the bytes read or written so far,
        /// <c>total</c> the bytes the call will read or write in all (<c>null</c> while it cannot
        /// know, as for a pipe read to its end). It is called first with <c>done</c> 0, then each
        /// time at least a MiB more is done, and last with <c>done == total</c>: for a write just
        /// before the output takes its place. Returning <c>true</c> lets the call go on;
        /// <c>false</c> stops it, and the call throws a <see cref="CBlobException"/> of
        /// <see cref="Status.Cancelled"/>, having changed nothing (a file being written is not
        /// put in place, an existing file keeps its bytes).</para>
        /// <para>It runs on the thread that made the call, inside the call: it must not use the
        /// blobs, models or files the call uses. Calls through one context from several threads
        /// run it one at a time. An exception it throws never crosses the library: it stops the
        /// call, and the <see cref="CBlobException"/> of <see cref="Status.Cancelled"/> carries
        /// it as its <see cref="Exception.InnerException"/>. A call in progress keeps the
        /// function it started with; once the function is replaced, or the Context is collected,
        /// calls go on without it (blobs made in the context keep using the function after
        /// <see cref="Dispose"/>, as they keep the context).</para>
        /// </remarks>
        public void SetProgress(Func<long, long?, bool> progress)
        {
            ProgressEntry entry = progress == null ? null : ProgressEntry.Add(progress);
            try
            {
                using (var u0 = guard.Use())
                    CBlobException.Check(NativeMethods.cblob_context_set_progress(
                        u0, entry == null ? null : ProgressEntry.Trampoline, entry == null ? IntPtr.Zero : entry.Key));
            }
            catch
            {
                if (entry != null)
                    entry.Forget();
                throw;
            }
            ProgressEntry previous = Interlocked.Exchange(ref progressEntry, entry);
            if (previous != null)
                previous.Forget();
        }

        ProgressEntry progressEntry;
    }

    /// <summary>
    /// A context's progress function, by key. The library is handed the key, not a GCHandle: a
    /// context handle outlives its Context (blobs keep it alive inside the library) and a call in
    /// progress keeps the callback it started with, so a key whose function is gone must still be
    /// safe to pass back: the call goes on. The entry's finalizer forgets the key once its
    /// Context is collected.
    /// </summary>
    sealed class ProgressEntry
    {
        static readonly Dictionary<long, Func<long, long?, bool>> functions = new Dictionary<long, Func<long, long?, bool>>();
        static long nextKey;

        /// <summary>The one delegate the library calls; a static field keeps it alive for the process.</summary>
        internal static readonly ProgressFn Trampoline = Run;

        /// <summary>The exception a progress function threw on this thread, for the failed call's exception.</summary>
        [ThreadStatic]
        static Exception pending;

        internal readonly IntPtr Key;
        int forgotten;

        ProgressEntry(long key)
        {
            Key = new IntPtr(key);
        }

        internal static ProgressEntry Add(Func<long, long?, bool> function)
        {
            lock (functions)
            {
                long key = ++nextKey;
                functions.Add(key, function);
                return new ProgressEntry(key);
            }
        }

        internal void Forget()
        {
            if (Interlocked.Exchange(ref forgotten, 1) != 0)
                return;
            lock (functions)
                functions.Remove(Key.ToInt64());
            GC.SuppressFinalize(this);
        }

        ~ProgressEntry()
        {
            Forget();
        }

        /// <summary>The exception a progress function threw on this thread since the last call, if any (taken once).</summary>
        internal static Exception TakePending()
        {
            Exception e = pending;
            pending = null;
            return e;
        }

        static int Run(IntPtr userData, long done, long total)
        {
            Func<long, long?, bool> function;
            lock (functions)
            {
                if (!functions.TryGetValue(userData.ToInt64(), out function))
                    return 0; // replaced, or its Context collected: the call goes on
            }
            try
            {
                lock (function)
                    return function(done, total < 0 ? (long?)null : total) ? 0 : 1;
            }
            catch (Exception e)
            {
                pending = e; // an exception must not cross the library: it stops the call
                return 1;
            }
        }
    }
}
