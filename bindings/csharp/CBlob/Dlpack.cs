// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): DLPack's ownership: owned tensors that
// call their deleter once, lend their pointer to an import and take it back if it fails, and
// spans over their memory. The structs' layouts and the exports and imports are generated
// (Tables.g.cs, Safe.g.cs).
using System;
using System.Runtime.InteropServices;
using System.Threading;

// DLPack: a blob's data or diff handed to NumPy, PyTorch, CuPy, JAX or any other DLPack 1.x
// consumer without a copy, and a DLPack tensor taken in as a blob without a copy (the header's
// "DLPack" section). The structs mirror DLPack's own header field for field (Tables.g.cs).
namespace CBlob
{
    // The structs' and enums' declarations are generated (Tables.g.cs, from
    // codegen/bindings/dlpack.yaml, with DLDataType's conversions from codegen/dtypes.yaml);
    // their constructors and text are here.
    public partial struct DLDevice
    {
        /// <summary>A device.</summary>
        public DLDevice(DLDeviceType deviceType, int deviceId)
        {
            DeviceType = deviceType;
            DeviceId = deviceId;
        }

        /// <summary>"Cuda:0" and the like.</summary>
        public override string ToString() { return DeviceType + ":" + DeviceId; }
    }

    public partial struct DLDataType
    {
        /// <summary>A type.</summary>
        public DLDataType(DLDataTypeCode code, byte bits, ushort lanes)
        {
            Code = code;
            Bits = bits;
            Lanes = lanes;
        }

        /// <summary>"Float32x1" and the like.</summary>
        public override string ToString() { return Code.ToString() + Bits + "x" + Lanes; }
    }

    /// <summary>
    /// What both owned DLPack tensor types share: the pointer, who deletes it, and the view's
    /// fields. Exactly one party calls the tensor's deleter: <see cref="Dispose"/> (or, late, the
    /// finalizer); a consumer, once <see cref="Release"/> has handed it the pointer; or cblob, once
    /// <see cref="Blob.FromDlpack(Context, DlpackTensor)"/> has taken the tensor in.
    /// </summary>
    /// <remarks>
    /// A tensor exported from a blob views the blob's memory, as a blob sharing that memory does:
    /// use the two as one blob (one thread at a time). The deleter itself may run on any thread,
    /// the finalizer's included. The properties throw <see cref="ObjectDisposedException"/> once
    /// the tensor is disposed or released.
    /// </remarks>
    public abstract class DlpackTensorBase : IDisposable
    {
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate void Deleter(IntPtr self);

        IntPtr ptr;

        internal DlpackTensorBase(IntPtr owned)
        {
            if (owned == IntPtr.Zero)
                throw new ArgumentException("a null DLPack tensor", nameof(owned));
            ptr = owned;
        }

        /// <summary>Runs the deleter of a tensor never disposed or handed over.</summary>
        ~DlpackTensorBase()
        {
            Delete(Interlocked.Exchange(ref ptr, IntPtr.Zero));
        }

        /// <summary>Runs the tensor's deleter, unless it was handed over; calling it again does nothing.</summary>
        public void Dispose()
        {
            Delete(Interlocked.Exchange(ref ptr, IntPtr.Zero));
            GC.SuppressFinalize(this);
        }

        /// <summary>
        /// Hands the tensor over: returns the pointer, whose deleter the caller (or the consumer
        /// it gives the pointer to) must call exactly once, and leaves this object empty
        /// (<see cref="Dispose"/> then does nothing). Zero for a disposed or released tensor.
        /// </summary>
        public IntPtr Release()
        {
            IntPtr owned = Interlocked.Exchange(ref ptr, IntPtr.Zero);
            GC.SuppressFinalize(this);
            return owned;
        }

        /// <summary>The pointer, still owned by this object (zero once disposed or released).</summary>
        public IntPtr Pointer { get { return ptr; } }

        /// <summary>Whether this object still owns a tensor.</summary>
        public bool IsOwned { get { return ptr != IntPtr.Zero; } }

        /// <summary>
        /// Lends the pointer to an import (the generated <see cref="Blob.FromDlpack"/> and its
        /// kin): the object is empty during the call, and owns the tensor again afterwards unless
        /// the call succeeded, when cblob owns it.
        /// </summary>
        internal Claim Use()
        {
            IntPtr owned = Interlocked.Exchange(ref ptr, IntPtr.Zero);
            if (owned == IntPtr.Zero)
                throw new ObjectDisposedException(GetType().Name);
            return new Claim(this, owned);
        }

        /// <summary>An import's hold on a tensor's pointer (see <see cref="Use"/>).</summary>
        internal sealed class Claim : IDisposable
        {
            readonly DlpackTensorBase tensor;
            readonly IntPtr owned;
            bool taken;

            internal Claim(DlpackTensorBase tensor, IntPtr owned)
            {
                this.tensor = tensor;
                this.owned = owned;
            }

            public static implicit operator IntPtr(Claim claim) { return claim.owned; }

            /// <summary>The import's status, noting whether cblob took the tensor (on success only).</summary>
            internal Status Took(Status status)
            {
                taken = status == Status.Ok;
                return status;
            }

            /// <summary>Gives a refused tensor back to its object, which stays its owner.</summary>
            public void Dispose()
            {
                if (taken)
                    GC.SuppressFinalize(tensor); // cblob's now: the object stays empty
                else
                    tensor.ptr = owned;
            }
        }

        /// <summary>The offset of the deleter in the struct (generated from its layout, as the next).</summary>
        internal abstract int DeleterOffset { get; }

        /// <summary>The offset of the DLTensor in the struct.</summary>
        internal abstract int TensorOffset { get; }

        void Delete(IntPtr owned)
        {
            if (owned == IntPtr.Zero)
                return;
            IntPtr deleter = Marshal.ReadIntPtr(owned, DeleterOffset);
            if (deleter == IntPtr.Zero)
                return;
            // For a deleter written in managed code (a delegate's native thunk), the runtime may
            // hand back that delegate, of its own type: it is called through reflection then.
            Delegate call = Marshal.GetDelegateForFunctionPointer(deleter, typeof(Deleter));
            var native = call as Deleter;
            if (native != null)
                native(owned);
            else
                call.DynamicInvoke(owned);
        }

        /// <summary>The live pointer, or ObjectDisposedException.</summary>
        internal IntPtr Live()
        {
            IntPtr owned = ptr;
            if (owned == IntPtr.Zero)
                throw new ObjectDisposedException(GetType().Name);
            return owned;
        }

        /// <summary>A copy of the view's fields.</summary>
        public unsafe DLTensor Tensor
        {
            get
            {
                DLTensor value = *(DLTensor*)(Live() + TensorOffset);
                GC.KeepAlive(this);
                return value;
            }
        }

        /// <summary>
        /// The data pointer: the first element for cblob's exports (a device address for device
        /// memory, which host code must not dereference); zero without elements.
        /// </summary>
        public IntPtr Data { get { return Tensor.Data; } }

        /// <summary>Bytes from <see cref="Data"/> to the first element (0 in cblob's exports).</summary>
        public ulong ByteOffset { get { return Tensor.ByteOffset; } }

        /// <summary>Where the memory lives: Cpu, CudaHost (pinned) or Cuda for cblob's exports.</summary>
        public DLDevice Device { get { return Tensor.Device; } }

        /// <summary>The element type as DLPack codes it.</summary>
        public DLDataType DType { get { return Tensor.DType; } }

        /// <summary>The number of axes.</summary>
        public int NDim { get { return Tensor.NDim; } }

        /// <summary>A copy of the dimensions.</summary>
        public long[] Shape
        {
            get
            {
                DLTensor t = Tensor;
                long[] dims = Copy(t.Shape, t.NDim) ?? new long[0];
                GC.KeepAlive(this);
                return dims;
            }
        }

        /// <summary>A copy of the strides in elements, or null for C-contiguous (cblob's exports).</summary>
        public long[] Strides
        {
            get
            {
                DLTensor t = Tensor;
                long[] strides = Copy(t.Strides, t.NDim);
                GC.KeepAlive(this);
                return strides;
            }
        }

        static long[] Copy(IntPtr values, int n)
        {
            if (values == IntPtr.Zero)
                return null;
            var copy = new long[Math.Max(n, 0)];
            if (n > 0)
                Marshal.Copy(values, copy, 0, n);
            return copy;
        }

        /// <summary>
        /// The elements as a span over the tensor's memory: for a C-contiguous host tensor (Cpu or
        /// CudaHost) of T's dtype. The span is valid while this object owns the tensor (keep it
        /// reachable) and, for an export, under the rules of the blob's spans.
        /// </summary>
        /// <exception cref="CBlobException">
        /// <see cref="Status.InvalidArgument"/> for device memory or strides that are not
        /// row-major, <see cref="Status.DType"/> for another element type, <see cref="Status.State"/>
        /// for a read-only tensor.
        /// </exception>
        public unsafe Span<T> AsSpan<T>() where T : struct
        {
            if (IsReadOnly)
                throw new CBlobException(Status.State, "cblob (C#): the DLPack tensor is read-only; use AsReadOnlySpan");
            int count;
            IntPtr first = HostElements<T>(out count);
            return new Span<T>((void*)first, count);
        }

        /// <summary>The elements as a read-only span; as <see cref="AsSpan{T}"/>, for read-only tensors too.</summary>
        public unsafe ReadOnlySpan<T> AsReadOnlySpan<T>() where T : struct
        {
            int count;
            IntPtr first = HostElements<T>(out count);
            return new ReadOnlySpan<T>((void*)first, count);
        }

        /// <summary>Whether the consumer must not write the memory (always false for a legacy tensor).</summary>
        public abstract bool IsReadOnly { get; }

        IntPtr HostElements<T>(out int count) where T : struct
        {
            DLTensor t = Tensor;
            if (t.Device.DeviceType != DLDeviceType.Cpu && t.Device.DeviceType != DLDeviceType.CudaHost)
                throw new CBlobException(Status.InvalidArgument, "cblob (C#): the DLPack tensor is on " + t.Device + ", not host memory");
            DType? wanted = Elements.DTypeOf<T>();
            if (wanted == null || !DLDataType.Of(wanted.Value).Equals(t.DType))
                throw new CBlobException(Status.DType, "cblob (C#): the DLPack tensor holds " + t.DType + ", not " + typeof(T).Name);
            long[] shape = Shape;
            long total = 1;
            foreach (long d in shape)
            {
                if (d < 0 || (d > 0 && total > int.MaxValue / d))
                    throw new CBlobException(Status.Overflow, "cblob (C#): the DLPack tensor's elements do not fit in a span");
                total *= d;
            }
            count = (int)total;
            if (count == 0)
                return IntPtr.Zero;
            long[] strides = Strides;
            if (strides != null)
            {
                long expected = 1;
                for (int axis = shape.Length - 1; axis >= 0; --axis)
                {
                    if (shape[axis] != 1 && strides[axis] != expected)
                        throw new CBlobException(Status.InvalidArgument, "cblob (C#): the DLPack tensor is not C-contiguous");
                    expected *= shape[axis];
                }
            }
            long first = t.Data.ToInt64() + (long)t.ByteOffset;
            if (t.Data == IntPtr.Zero || first % Marshal.SizeOf(typeof(T)) != 0)
                throw new CBlobException(Status.InvalidArgument, "cblob (C#): the DLPack tensor's data is null or not aligned for its elements");
            return new IntPtr(first);
        }
    }

    /// <summary>An owned <c>DLManagedTensorVersioned</c>: see <see cref="DlpackTensorBase"/>.</summary>
    public sealed partial class DlpackTensor : DlpackTensorBase
    {
        /// <summary>
        /// Takes ownership of a tensor from elsewhere (another producer, or an earlier
        /// <see cref="DlpackTensorBase.Release"/>): disposing the object calls its deleter. The
        /// pointer must be a valid tensor whose shape, strides and memory stay valid until then.
        /// </summary>
        /// <exception cref="ArgumentException">For a zero pointer.</exception>
        public DlpackTensor(IntPtr owned) : base(owned) { }

        /// <summary>The DLPack version the producer wrote (cblob writes its header's, 1.3).</summary>
        public DLPackVersion Version { get { return Value.Version; } }

        /// <summary>The flags.</summary>
        public DLPackFlags Flags { get { return Value.Flags; } }

        /// <summary>Whether the consumer must not write the memory (an export with readOnly).</summary>
        public override bool IsReadOnly { get { return (Flags & DLPackFlags.ReadOnly) != 0; } }
    }

    /// <summary>
    /// An owned legacy <c>DLManagedTensor</c> (no version, no flags: always writable): see
    /// <see cref="DlpackTensorBase"/>.
    /// </summary>
    public sealed partial class LegacyDlpackTensor : DlpackTensorBase
    {
        /// <summary>Takes ownership of a tensor from elsewhere, as the <see cref="DlpackTensor"/> constructor does.</summary>
        public LegacyDlpackTensor(IntPtr owned) : base(owned) { }

        /// <summary>Always false: the legacy struct cannot say read-only.</summary>
        public override bool IsReadOnly { get { return false; } }
    }
}
