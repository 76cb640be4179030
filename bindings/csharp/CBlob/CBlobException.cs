// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the exception type every call throws, and
// the reading of the calling thread's message after a failed call (IsNoGpu is generated from
// codegen/bindings/errors.yaml: Tables.g.cs).
using System;

namespace CBlob
{
    /// <summary>
    /// A failed cblob call: the <see cref="Status"/> the library returned and the message it
    /// recorded for the calling thread (which names the C function and says what was wrong).
    /// </summary>
    public partial class CBlobException : Exception
    {
        /// <summary>The status the call returned.</summary>
        public Status Status { get; }

        /// <summary>The library's message, without the status name.</summary>
        public string LibraryMessage { get; }

        /// <summary>
        /// The public C function whose call failed (<c>"cblob_model_open_file"</c>), however deep
        /// inside the library the failure was found; empty for an error this assembly found itself.
        /// </summary>
        public string Function { get; }

        /// <summary>What went wrong, without the function's name: the message is
        /// <c>"&lt;function&gt;: &lt;detail&gt;"</c>.</summary>
        public string Detail { get; }

        /// <summary>An exception for a status and its message (no function: the detail is the message).</summary>
        public CBlobException(Status status, string message)
            : this(status, message, "", message)
        {
        }

        /// <summary>An exception for a status, the library's message and its two parts.</summary>
        public CBlobException(Status status, string message, string function, string detail)
            : this(status, message, function, detail, null)
        {
        }

        /// <summary>As the four-argument form, with the exception that caused the failure (a
        /// progress function's, for <see cref="Status.Cancelled"/>).</summary>
        public CBlobException(Status status, string message, string function, string detail, Exception innerException)
            : base(message + " (" + NameOf(status) + ")", innerException)
        {
            Status = status;
            LibraryMessage = message;
            Function = function;
            Detail = detail;
        }

        /// <summary>The C enumerator's name of a status (<c>"CBLOB_ERR_SHAPE"</c>).</summary>
        public static string NameOf(Status status)
        {
            return Text.FromUtf8(NativeMethods.cblob_status_name(status));
        }

        /// <summary>Throws for a status other than Ok, with this thread's message.</summary>
        /// <remarks>
        /// A managed thread runs on one OS thread during a P/Invoke call and right after it, so
        /// the message read here is the one the failed call recorded.
        /// </remarks>
        internal static void Check(Status status)
        {
            if (status != Status.Ok)
                throw Last(status);
        }

        internal static CBlobException Last(Status status)
        {
            // A progress function that threw stopped the call: its exception is the cause.
            Exception cause = status == Status.Cancelled ? ProgressEntry.TakePending() : null;
            return new CBlobException(status, Text.FromUtf8(NativeMethods.cblob_last_error_message()),
                                      Text.FromUtf8(NativeMethods.cblob_last_error_function()),
                                      Text.FromUtf8(NativeMethods.cblob_last_error_detail()), cause);
        }
    }
}
