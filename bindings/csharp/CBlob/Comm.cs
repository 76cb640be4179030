// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): communicators over MPI (libcblob_mpi
// loaded at run time, its own error messages) and NCCL (a fixed-size id), and the timeout as a
// TimeSpan; the collectives and their requests are generated.
using System;
using System.Runtime.InteropServices;

namespace CBlob
{
    /// <summary>
    /// A communicator: a group of ranks (processes, or GPUs) that run collectives together. Every
    /// rank makes the same collectives in the same order, with lists of the same dtypes and
    /// counts. Collectives take a part and blobs (one, many, or an arena from
    /// <see cref="Blob.CreateArena"/>); lists are fused into buckets
    /// (<see cref="SetBucketBytes"/>) with bit-identical results.
    /// </summary>
    /// <remarks>
    /// An engine failure throws <see cref="CBlobException"/> with <see cref="Status.Comm"/> and
    /// breaks the communicator (every later collective throws at once: dispose it); a wait past
    /// the timeout is <see cref="Status.Timeout"/>. Errors in the arguments are found before
    /// anything starts and leave it usable. A communicator and its requests are used from one
    /// thread at a time. Dispose frees it (requests not disposed yet keep the library's
    /// communicator until they are); the finalizer frees one that is forgotten.
    /// </remarks>
    public sealed partial class Comm : IDisposable
    {
        /// <summary>
        /// A communicator over MPI_COMM_WORLD (under mpirun, its ranks; started alone, one rank)
        /// through libcblob_mpi.so.1, loaded at run time (<see cref="MpiLibraryPath"/>): libcblob
        /// never links MPI. MPI is initialised (MPI_THREAD_MULTIPLE) if nobody has, and then
        /// finalized when the process exits. Collective over the world. MPI's engine works on
        /// host memory (float32, float64, int32, uint32).
        /// </summary>
        /// <exception cref="CBlobException">
        /// <see cref="Status.State"/> when the library cannot be loaded or MPI is finalized,
        /// <see cref="Status.Comm"/> when MPI fails.
        /// </exception>
        public static Comm MpiWorld(Context context)
        {
            if (context == null)
                throw new ArgumentNullException(nameof(context));
            var library = MpiLibrary.Load();
            using (var c = context.Use())
            {
                IntPtr created;
                Status status = library.CreateWorld(c, out created);
                if (status != Status.Ok)
                    throw new CBlobException(status, Text.FromUtf8(library.LastError()));
                return new Comm(new CommHandle(created));
            }
        }

        /// <summary>
        /// The file <see cref="MpiWorld"/> loads: <c>$CBLOB_MPI_LIBRARY</c> when set, else
        /// libcblob_mpi.so.1 from the dynamic loader's search path.
        /// </summary>
        public static string MpiLibraryPath
        {
            get
            {
                string path = Environment.GetEnvironmentVariable("CBLOB_MPI_LIBRARY");
                return string.IsNullOrEmpty(path) ? "libcblob_mpi.so.1" : path;
            }
        }

        /// <summary>
        /// Finalizes MPI now, once every communicator over it is disposed. libcblob_mpi finalizes
        /// the MPI that <see cref="MpiWorld"/> initialised when the process exits; call this
        /// before disposing a communicator after a failed collective whose missing rank may still
        /// join it (MPI may write into the blobs' memory until it is finalized: cblob/mpi.h).
        /// Nothing happens when MPI was never initialised, is finalized already, or libcblob_mpi
        /// was never loaded. MPI cannot be initialised again afterwards.
        /// </summary>
        /// <exception cref="CBlobException"><see cref="Status.Comm"/> when MPI_Finalize fails.</exception>
        public static void FinalizeMpi()
        {
            MpiLibrary library = MpiLibrary.IfLoaded;
            if (library == null)
                return;
            int started, done;
            library.Initialized(out started);
            library.Finalized(out done);
            int code = started != 0 && done == 0 ? library.Finalize() : 0;
            if (code != 0)
                throw new CBlobException(Status.Comm, "cblob (C#): MPI_Finalize failed (MPI error " + code + ")");
        }

        /// <summary>
        /// The unique id of a new NCCL communicator (ncclGetUniqueId): one rank makes it and sends
        /// it to the others by its own means; each then calls <see cref="Nccl"/>.
        /// </summary>
        /// <exception cref="CBlobException">
        /// Without a GPU, the status that says why (<see cref="CBlobException.IsNoGpu"/>); without
        /// NCCL, <see cref="Status.NcclMissing"/>; <see cref="Status.Comm"/> when NCCL fails.
        /// </exception>
        public static byte[] NcclUniqueId()
        {
            var id = new byte[Constants.NcclUniqueIdBytes];
            CBlobException.Check(NativeMethods.cblob_comm_nccl_unique_id(id, (UIntPtr)id.Length));
            return id;
        }

        /// <summary>
        /// Joins the NCCL communicator of <paramref name="nranks"/> ranks that
        /// <paramref name="uniqueId"/> names, as <paramref name="rank"/>, on the context's GPU (one
        /// rank per GPU), blocking until every rank has joined. Collectives then run on device
        /// memory, queued on the context's stream. Errors as <see cref="NcclUniqueId"/>.
        /// </summary>
        public static Comm Nccl(Context context, byte[] uniqueId, int nranks, int rank)
        {
            if (context == null)
                throw new ArgumentNullException(nameof(context));
            if (uniqueId == null || uniqueId.Length != Constants.NcclUniqueIdBytes)
                throw new ArgumentException("an NCCL unique id has " + Constants.NcclUniqueIdBytes + " bytes", nameof(uniqueId));
            using (var c = context.Use())
            {
                CommHandle created;
                Status status = NativeMethods.cblob_comm_create_nccl(c, ref uniqueId[0], nranks, rank, out created);
                if (status != Status.Ok)
                {
                    created.Dispose();
                    throw CBlobException.Last(status);
                }
                return new Comm(created);
            }
        }

        /// <summary>
        /// How long a wait may take before it throws <see cref="Status.Timeout"/> (and breaks the
        /// communicator), in whole milliseconds; null (the default) waits as long as it takes. Set
        /// the same on every rank.
        /// </summary>
        public void SetTimeout(TimeSpan? timeout)
        {
            long ms = timeout.HasValue ? (long)timeout.Value.TotalMilliseconds : -1;
            if (timeout.HasValue && ms < 0)
                throw new ArgumentOutOfRangeException(nameof(timeout), "a timeout is not negative");
            using (var c = guard.Use())
                CBlobException.Check(NativeMethods.cblob_comm_set_timeout(c, ms));
        }

        /// <inheritdoc/>
        public override string ToString()
        {
            return IsDisposed ? "Comm(disposed)" : "Comm(rank " + Rank + " of " + Size + ")";
        }
    }

    /// <summary>
    /// A collective in flight (<see cref="Comm.AllreduceStart"/> and friends).
    /// <see cref="Wait"/> finishes it and throws the collective's error; Dispose (after Wait, or
    /// instead of it, which waits and loses the error) frees it; the finalizer frees one that is
    /// forgotten.
    /// </summary>
    /// <remarks>
    /// The request holds its native request only: the library keeps the communicator and the
    /// blobs' memory until the request ends, so its start methods, <see cref="Wait"/> and
    /// Dispose are generated (Safe.g.cs).
    /// </remarks>
    public sealed partial class CommRequest : IDisposable
    {
    }

    /// <summary>libcblob_mpi, loaded once with dlopen (RTLD_GLOBAL: Open MPI's plugins look up libmpi's symbols).</summary>
    sealed class MpiLibrary
    {
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate Status CreateWorldFn(IntPtr context, out IntPtr comm);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate IntPtr LastErrorFn();

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int QueryFn(out int flag);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int FinalizeFn();

        internal CreateWorldFn CreateWorld;
        internal LastErrorFn LastError;
        // MPI's own, through libcblob_mpi's dependencies (for Comm.FinalizeMpi).
        internal QueryFn Initialized, Finalized;
        internal FinalizeFn Finalize;

        /// <summary>The library if it was loaded, else null (nothing loads it).</summary>
        internal static MpiLibrary IfLoaded { get { return loaded.IsValueCreated ? loaded.Value : null; } }

        static readonly Lazy<MpiLibrary> loaded = new Lazy<MpiLibrary>(Open);
        static string failure;

        const int RTLD_NOW = 2, RTLD_GLOBAL = 0x100;

        [DllImport("libdl.so.2")]
        static extern IntPtr dlopen(string file, int mode);

        [DllImport("libdl.so.2")]
        static extern IntPtr dlsym(IntPtr handle, string symbol);

        [DllImport("libdl.so.2")]
        static extern IntPtr dlerror();

        internal static MpiLibrary Load()
        {
            MpiLibrary library = loaded.Value;
            if (library == null)
                throw new CBlobException(Status.State, "cblob (C#): cannot load " + Comm.MpiLibraryPath + " (" + failure +
                    "): install libcblob-mpi1, or set CBLOB_MPI_LIBRARY");
            return library;
        }

        static MpiLibrary Open()
        {
            IntPtr handle = dlopen(Comm.MpiLibraryPath, RTLD_NOW | RTLD_GLOBAL);
            if (handle == IntPtr.Zero)
            {
                failure = Text.FromUtf8(dlerror());
                return null;
            }
            string[] names = { "cblob_comm_create_mpi_world", "cblob_mpi_last_error_message", "MPI_Initialized", "MPI_Finalized", "MPI_Finalize" };
            var symbols = new IntPtr[names.Length];
            for (int i = 0; i < names.Length; i++)
            {
                symbols[i] = dlsym(handle, names[i]);
                if (symbols[i] == IntPtr.Zero)
                {
                    failure = "it lacks " + names[i];
                    return null;
                }
            }
            return new MpiLibrary
            {
                CreateWorld = (CreateWorldFn)Marshal.GetDelegateForFunctionPointer(symbols[0], typeof(CreateWorldFn)),
                LastError = (LastErrorFn)Marshal.GetDelegateForFunctionPointer(symbols[1], typeof(LastErrorFn)),
                Initialized = (QueryFn)Marshal.GetDelegateForFunctionPointer(symbols[2], typeof(QueryFn)),
                Finalized = (QueryFn)Marshal.GetDelegateForFunctionPointer(symbols[3], typeof(QueryFn)),
                Finalize = (FinalizeFn)Marshal.GetDelegateForFunctionPointer(symbols[4], typeof(FinalizeFn)),
            };
        }
    }
}
