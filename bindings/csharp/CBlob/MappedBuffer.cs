// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): mapped ranges as disposable
// MappedBuffer<T> objects with spans.
using System;
using System.Collections.Generic;

namespace CBlob
{
    /// <summary>
    /// An open mapping of a range of a blob's data or diff (NeoML's GetBuffer): a span over host
    /// memory until <see cref="Dispose"/> (NeoML's ReleaseBuffer). Made by <see cref="Blob.Map{T}"/>.
    /// </summary>
    /// <remarks>
    /// <para>
    /// Where the part's current copy is on the device, the range is staged through host memory:
    /// copied from the device when mapped with read access, and back when a mapping with write
    /// access is disposed. Otherwise the span is the blob's host memory itself.
    /// </para>
    /// <para>
    /// A blob's mappings end last in, first out (<see cref="Status.State"/> otherwise, and
    /// nothing changes): nest <c>using</c> blocks. While mapped, a blob cannot change shape,
    /// share memory or take a buffer, and a mapped window cannot move. An open mapping holds its
    /// blob; disposing the <see cref="Blob"/> it was made through ends the blob's open mappings
    /// first (newest first). Mappings have no finalizer: ending one changes the blob, which
    /// another thread may be using, so a mapping that is never disposed, of a blob never
    /// disposed, keeps that blob's memory for the life of the process.
    /// </para>
    /// </remarks>
    public sealed class MappedBuffer<T> : IDisposable, Blob.IMapping where T : struct
    {
        readonly Blob blob;
        readonly IntPtr ptr;
        IntPtr buffer;

        internal MappedBuffer(Blob blob, IntPtr buffer, IntPtr ptr, int length, Access access)
        {
            this.blob = blob;
            this.buffer = buffer;
            this.ptr = ptr;
            Length = length;
            Access = access;
        }

        /// <summary>The number of elements mapped.</summary>
        public int Length { get; }

        /// <summary>What the mapping was made for.</summary>
        public Access Access { get; }

        /// <summary>Whether the mapping has ended.</summary>
        public bool IsDisposed { get { return buffer == IntPtr.Zero; } }

        /// <summary>The mapped elements, to read; valid until the mapping ends.</summary>
        public unsafe ReadOnlySpan<T> ReadOnlySpan
        {
            get { return new ReadOnlySpan<T>((void*)Open(), Length); }
        }

        /// <summary>The mapped elements, to write (a mapping with write access only).</summary>
        /// <exception cref="NotSupportedException">For a mapping made with <see cref="Access.Read"/>.</exception>
        public unsafe Span<T> Span
        {
            get
            {
                if (Access == Access.Read)
                    throw new NotSupportedException("cblob (C#): the mapping was made for reading; map with Access.Write or Access.ReadWrite to write");
                return new Span<T>((void*)Open(), Length);
            }
        }

        IntPtr Open()
        {
            if (buffer == IntPtr.Zero)
                throw new ObjectDisposedException(nameof(MappedBuffer<T>));
            return ptr;
        }

        /// <summary>
        /// Ends the mapping: a range staged from the device with write access is copied back.
        /// Calling it again does nothing.
        /// </summary>
        /// <exception cref="CBlobException">
        /// When this is not the blob's newest mapping (<see cref="Status.State"/>), or the copy back
        /// fails (<see cref="Status.Device"/>); the mapping stays open, and Dispose may be called
        /// again.
        /// </exception>
        public void Dispose()
        {
            if (buffer == IntPtr.Zero)
                return;
            CBlobException.Check(NativeMethods.cblob_buffer_unmap(buffer));
            buffer = IntPtr.Zero;
            blob.Forget(this);
        }

        void Blob.IMapping.End()
        {
            Dispose();
        }
    }

    public sealed partial class Blob
    {
        /// <summary>What a blob keeps of its open mappings.</summary>
        internal interface IMapping
        {
            void End();
        }

        // Mappings made through this object and not ended yet, oldest first. Locked: Map and a
        // mapping's Dispose are calls on the blob, but Dispose of the blob may run on another thread.
        readonly List<IMapping> mappings = new List<IMapping>();

        /// <summary>
        /// Maps count elements of data or diff from position (NeoML's GetBuffer). T must be the
        /// blob's element type; the range must lie within <see cref="Count"/>
        /// (<see cref="Status.OutOfRange"/> otherwise). With <see cref="Access.Write"/> only, the
        /// span starts with unspecified values (the range is not copied from the device), which the
        /// caller must overwrite. Dispose the result (a <c>using</c> block) to end the mapping.
        /// </summary>
        public MappedBuffer<T> Map<T>(Part part, long position, long count, Access access = Access.ReadWrite) where T : struct
        {
            CheckElement<T>();
            if (count > int.MaxValue)
                throw new CBlobException(Status.Overflow, "cblob (C#): " + count + " elements do not fit in a span");
            IntPtr buffer, ptr;
            using (var b = guard.Use())
                CBlobException.Check(NativeMethods.cblob_blob_map(b, part, position, count, access, out buffer, out ptr));
            var mapping = new MappedBuffer<T>(this, buffer, ptr, (int)count, access);
            lock (mappings)
                mappings.Add(mapping);
            return mapping;
        }

        internal void Forget(IMapping mapping)
        {
            lock (mappings)
                mappings.Remove(mapping);
        }

        /// <summary>Ends the open mappings, newest first; the first failure is thrown at the end.</summary>
        void EndMappings()
        {
            IMapping[] open;
            lock (mappings)
            {
                open = mappings.ToArray();
                mappings.Clear();
            }
            CBlobException first = null;
            for (int i = open.Length - 1; i >= 0; i--)
            {
                try
                {
                    open[i].End();
                }
                catch (CBlobException e)
                {
                    // The mapping stays open in the library; its Dispose may try again.
                    first = first ?? e;
                }
            }
            if (first != null)
                throw first;
        }
    }
}
