// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the library's file name and ABI version.
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
    public static partial class Library
    {
        /// <summary>The file name the P/Invoke declarations bind.</summary>
        public const string FileName = NativeMethods.LibraryName;

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

    }
}
