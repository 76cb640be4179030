// SPDX-License-Identifier: BSD-2-Clause
// The guard that keeps a native handle alive through calls (CBlob/Guard.cs): Dispose while a
// call is in flight defers the release to the call's end; calls after Dispose are refused; and
// Dispose racing with calls on other threads neither frees a handle under a call nor leaks it.
using System;
using System.Linq;
using System.Threading;
using NUnit.Framework;

namespace CBlob.Tests
{
    [TestFixture]
    public class GuardTests
    {
        [Test]
        public void DisposeDuringACallReleasesWhenTheCallEnds()
        {
            using (var ctx = new Context())
            {
                var blob = new Blob(ctx, DType.Float32, 3);
                var guard = new Guard(blob.Handle);
                Use call = guard.Use();
                guard.Dispose();
                Assert.IsTrue(guard.IsDisposed);
                Assert.IsFalse(blob.Handle.IsClosed, "a call is in flight");
                Assert.Throws<ObjectDisposedException>(() => guard.Use());
                Assert.IsFalse(blob.Handle.IsClosed, "a refused call does not release it");
                call.Dispose();
                Assert.IsTrue(blob.Handle.IsClosed, "the last call out released it");
                guard.Dispose();
            }
        }

        [Test]
        public void DisposeRacingWithCallsOnOtherThreads()
        {
            using (var ctx = new Context())
            {
                for (int round = 0; round < 20; round++)
                {
                    var blob = new Blob(ctx, DType.Float32, 2, 3);
                    var start = new ManualResetEventSlim();
                    int answered = 0, refused = 0;
                    Exception wrong = null;
                    Thread[] threads = Enumerable.Range(0, 3).Select(_ => new Thread(() =>
                    {
                        start.Wait();
                        for (int i = 0; i < 2000; i++)
                        {
                            try
                            {
                                if (blob.Count != 6)
                                    throw new InvalidOperationException("a wrong count");
                                Interlocked.Increment(ref answered);
                            }
                            catch (ObjectDisposedException)
                            {
                                Interlocked.Increment(ref refused);
                            }
                            catch (Exception e)
                            {
                                wrong = e;
                            }
                        }
                    })).ToArray();
                    foreach (Thread t in threads)
                        t.Start();
                    start.Set();
                    Thread.SpinWait(20000 * (round % 5));
                    blob.Dispose();
                    foreach (Thread t in threads)
                        t.Join();
                    Assert.IsNull(wrong, "{0}", wrong);
                    Assert.AreEqual(3 * 2000, answered + refused);
                    Assert.IsTrue(blob.Handle.IsClosed, "released once every call had returned");
                }
            }
        }
    }
}
