// SPDX-License-Identifier: BSD-2-Clause
// What every test fixture that works in one context shares: a fresh context per test, disposed
// after it, and a check that a call throws CBlobException with a given status. NUnit 2.6 runs a
// base class's [SetUp] and [TearDown] for each test of a derived fixture.
using NUnit.Framework;

namespace CBlob.Tests
{
    public abstract class ContextFixture
    {
        protected Context ctx;

        [SetUp]
        public void CreateContext() { ctx = new Context(); }

        [TearDown]
        public void DisposeContext() { ctx.Dispose(); }

        protected static CBlobException Throws(Status status, TestDelegate call)
        {
            var e = Assert.Throws<CBlobException>(call);
            Assert.AreEqual(status, e.Status, e.Message);
            return e;
        }
    }
}
