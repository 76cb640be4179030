// SPDX-License-Identifier: BSD-2-Clause
namespace CBlob
{
    /// <summary>What the loaded native library says about itself.</summary>
    /// <remarks>
    /// The P/Invoke declarations name the library by its SONAME, <c>libcblob.so.1</c>, which the
    /// dynamic loader finds where cblob is installed or on <c>LD_LIBRARY_PATH</c>. To bind another
    /// file (a build tree's, say): on Mono, put a <c>CBlob.dll.config</c> beside CBlob.dll with
    /// <c>&lt;dllmap dll="libcblob.so.1" target="/path/to/libcblob.so.1"/&gt;</c>; on .NET, call
    /// <c>NativeLibrary.SetDllImportResolver</c> for the CBlob assembly before the first call.
    /// </remarks>
    public static class Library
    {
        /// <summary>The file name the P/Invoke declarations bind.</summary>
        public const string FileName = NativeMethods.LibraryName;

        /// <summary>The loaded library's version, "major.minor.patch".</summary>
        public static string Version
        {
            get { return Text.FromUtf8(NativeMethods.cblob_version()); }
        }

        /// <summary>The ABI major version the loaded library implements.</summary>
        public static int AbiVersionMajor
        {
            get { return (int)(NativeMethods.cblob_abi_version() >> 16); }
        }

        /// <summary>The ABI minor version the loaded library implements.</summary>
        public static int AbiVersionMinor
        {
            get { return (int)(NativeMethods.cblob_abi_version() & 0xffff); }
        }

        /// <summary>The CPU BLAS in use and its threading.</summary>
        public static string BlasInfo
        {
            get { return Text.FromUtf8(NativeMethods.cblob_blas_info()); }
        }

        /// <summary>The vector extensions the CPU kernels selected at load time.</summary>
        public static string CpuFeatures
        {
            get { return Text.FromUtf8(NativeMethods.cblob_cpu_features()); }
        }
    }
}
