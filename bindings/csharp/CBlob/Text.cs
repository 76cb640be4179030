// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): strings and the two-call convention.
using System;
using System.Text;

namespace CBlob
{
    /// <summary>Strings and bytes crossing to and from the library.</summary>
    internal static class Text
    {
        /// <summary>Copies a string the library owns; IntPtr.Zero gives "".</summary>
        internal static unsafe string FromUtf8(IntPtr ptr)
        {
            if (ptr == IntPtr.Zero)
                return "";
            byte* bytes = (byte*)ptr;
            int length = 0;
            while (bytes[length] != 0)
                length++;
            return Encoding.UTF8.GetString(bytes, length);
        }

        /// <summary>
        /// A string argument as the library takes it: NUL-terminated UTF-8. A string with a NUL
        /// inside is refused (the library would read only up to it); null gives null.
        /// </summary>
        internal static byte[] ToUtf8(string text, string what)
        {
            if (text == null)
                return null;
            if (text.IndexOf('\0') >= 0)
                throw new CBlobException(Status.InvalidArgument, "cblob (C#): " + what + " \"" + text.Replace("\0", "\\0") + "\" contains a NUL character");
            byte[] bytes = new byte[Encoding.UTF8.GetByteCount(text) + 1];
            Encoding.UTF8.GetBytes(text, 0, text.Length, bytes, 0);
            return bytes;
        }

        /// <summary>A call of the two-call convention (a null buffer of size 0 asks for the length).</summary>
        internal delegate Status SizedCall(byte[] buffer, UIntPtr size, out UIntPtr length);

        /// <summary>
        /// What a call of the two-call convention writes; nul says whether the text ends with a
        /// NUL the length leaves out. Asks again while the result grows between the two calls (a
        /// log another thread's blobs write to, say).
        /// </summary>
        internal static byte[] ReadSized(bool nul, SizedCall call)
        {
            UIntPtr length;
            CBlobException.Check(call(null, UIntPtr.Zero, out length));
            while (true)
            {
                byte[] buffer = new byte[checked((int)(ulong)length + (nul ? 1 : 0))];
                Status status = call(buffer, (UIntPtr)buffer.Length, out length);
                if (status == Status.OutOfRange)
                {
                    CBlobException.Check(call(null, UIntPtr.Zero, out length));
                    continue;
                }
                CBlobException.Check(status);
                Array.Resize(ref buffer, (int)(ulong)length);
                return buffer;
            }
        }

        /// <summary>A string the library writes with the two-call convention.</summary>
        internal static string ReadText(SizedCall call)
        {
            byte[] bytes = ReadSized(true, call);
            return Encoding.UTF8.GetString(bytes, 0, bytes.Length);
        }

        /// <summary>A call of the two-call convention for an int64 array (null and 0 ask for the count).</summary>
        internal delegate Status ArrayCall(long[] values, long room, out long count);

        /// <summary>An int64 array the library writes with the two-call convention.</summary>
        internal static long[] ReadInt64s(ArrayCall call)
        {
            long count;
            CBlobException.Check(call(null, 0, out count));
            var values = new long[count];
            if (count > 0)
            {
                CBlobException.Check(call(values, count, out count));
                Array.Resize(ref values, checked((int)count));
            }
            return values;
        }

        /// <summary>Serialized bytes the library writes with the two-call convention.</summary>
        internal static byte[] ReadBytes(SizedCall call)
        {
            return ReadSized(false, call);
        }
    }
}
