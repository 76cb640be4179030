using System;
using System.Text;

namespace CBlob
{
    /// <summary>Strings from the library: NUL-terminated UTF-8 it owns.</summary>
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
    }
}
