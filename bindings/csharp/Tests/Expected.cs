// SPDX-License-Identifier: BSD-2-Clause
// What the tests share: where the Caffe files are, and the expected answers of a model
// (*.layers.txt, an independent decoding of the file).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;

namespace CBlob.Tests
{
    sealed class ExpectedBlob
    {
        public long[] Shape;
        public long Count;
        public double First, Sum;
    }

    sealed class ExpectedLayer
    {
        public string Name, Type;
        public List<ExpectedBlob> Blobs = new List<ExpectedBlob>();
    }

    static class Expected
    {
        /// <summary>The source tree's root (the test driver names it in CBLOB_SOURCE_DIR).</summary>
        public static string SourceDir
        {
            get { return Environment.GetEnvironmentVariable("CBLOB_SOURCE_DIR") ?? Path.Combine("..", "..", ".."); }
        }

        /// <summary>../shared/data/caffe beside the checkout (CTest names it in CBLOB_CAFFE_DATA_DIR).</summary>
        public static string CaffeDataDir
        {
            get { return Environment.GetEnvironmentVariable("CBLOB_CAFFE_DATA_DIR") ?? Path.Combine(SourceDir, "..", "shared", "data", "caffe"); }
        }

        public static string Sample(string name)
        {
            return Path.Combine(SourceDir, "samples", name);
        }

        static double Number(string text)
        {
            return double.Parse(text, NumberStyles.Float, CultureInfo.InvariantCulture);
        }

        /// <summary>The net's name and layers from a *.layers.txt file.</summary>
        public static List<ExpectedLayer> Layers(string path, out string netName)
        {
            netName = null;
            var layers = new List<ExpectedLayer>();
            foreach (string line in File.ReadAllLines(path))
            {
                if (line.StartsWith("net name: ", StringComparison.Ordinal))
                    netName = line.Substring("net name: ".Length).Trim('\'');
                else if (line.Length > 0 && char.IsDigit(line[0]) && line.Contains(" | "))
                {
                    // idx | name | type | bottoms -> tops | shape=[a,b] (n data(float32)); ...
                    string[] cells = line.Split(new[] { " | " }, StringSplitOptions.None);
                    var layer = new ExpectedLayer { Name = cells[1], Type = cells[2] };
                    foreach (string b in cells[4].Split(new[] { "; " }, StringSplitOptions.None))
                    {
                        if (!b.StartsWith("shape=[", StringComparison.Ordinal))
                            continue;
                        string dims = b.Substring(7, b.IndexOf(']') - 7);
                        long[] shape = dims.Split(',').Select(d => (long)Number(d)).ToArray();
                        layer.Blobs.Add(new ExpectedBlob { Shape = shape, Count = shape.Aggregate(1L, (x, y) => x * y) });
                    }
                    layers.Add(layer);
                }
                else if (line.Contains(".blobs[") && line.Contains(": n="))
                {
                    // conv1.blobs[0]: n=500 first=0.0483 sum=1.53 min=... max=...
                    int colon = line.IndexOf(": ", StringComparison.Ordinal);
                    string head = line.Substring(0, colon);
                    int bracket = head.IndexOf(".blobs[", StringComparison.Ordinal);
                    string name = head.Substring(0, bracket);
                    int index = int.Parse(head.Substring(bracket + 7).TrimEnd(']'), CultureInfo.InvariantCulture);
                    var fields = line.Substring(colon + 2).Split(' ').Select(f => f.Split('='))
                        .ToDictionary(kv => kv[0], kv => Number(kv[1]));
                    ExpectedBlob blob = layers.First(l => l.Name == name).Blobs[index];
                    if ((long)fields["n"] != blob.Count)
                        throw new InvalidDataException(path + ": " + head + " has " + fields["n"] + " values and " + blob.Count + " elements");
                    blob.First = fields["first"];
                    blob.Sum = fields["sum"];
                }
            }
            return layers;
        }

        /// <summary>Whether two sums of float32 values agree: the expected ones have 9 significant digits.</summary>
        public static bool Agree(double actual, double expected)
        {
            return Math.Abs(actual - expected) <= 1e-6 * Math.Max(1.0, Math.Abs(expected));
        }
    }
}
