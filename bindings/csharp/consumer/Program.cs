// SPDX-License-Identifier: BSD-2-Clause
// A program using cblob through the CBlob NuGet package (bindings/csharp/test_nuget.sh restores
// the package, builds this with Mono's xbuild and runs it with no LD_LIBRARY_PATH). It prints
// the result of a small computation and the file the native library was loaded from.
using System;
using System.IO;
using System.Linq;
using CBlob;

static class Program
{
    static int Main()
    {
        using (var context = new Context())
        using (var blob = new Blob(context, DType.Float32, 2, 3))
        {
            blob.CopyIn(new float[] { -2, -1, 0, 1, 2, 3 });
            Console.WriteLine("{0} {1}", blob.ShapeString, blob.Asum(Part.Data));
        }
        string loaded = File.ReadAllLines("/proc/self/maps")
            .Where(line => line.EndsWith("/" + Library.FileName))
            .Select(line => line.Substring(line.IndexOf('/')))
            .FirstOrDefault();
        Console.WriteLine(loaded ?? "(libcblob.so.1 is not mapped)");
        return 0;
    }
}
