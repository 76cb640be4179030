# SPDX-License-Identifier: BSD-2-Clause
"""The collectives on two ranks: run by test_comm.py under mpirun -np 2 (every rank runs this
file; a failed assertion exits non-zero, and mpirun with it). Each rank computes the serial
reference of every collective from every rank's inputs, which it can make itself, and checks its
result bit for bit: the results are then identical across ranks too.

Over mpi4py's MPI.COMM_WORLD when mpi4py can be imported, and always over Comm.from_mpi() (MPI_COMM_WORLD through
libcblob_mpi alone)."""
import sys

import numpy as np

import cblob
from cblob import Part


def inputs(rank, n, dtype, salt):
    """Rank `rank`'s values: exactly representable, distinct per rank, element and salt."""
    values = (np.arange(n) * 7 + rank * 1000 + salt * 31) % 977 - 400
    return (values / 8).astype(dtype) if np.dtype(dtype).kind == "f" else values.astype(dtype)


def same_bits(actual, expected, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, what
    assert actual.tobytes() == expected.tobytes(), f"{what}: {actual[:4]} != {expected[:4]}"


def serial_sum(n, dtype, salt, size):
    total = inputs(0, n, dtype, salt)
    for rank in range(1, size):
        total = total + inputs(rank, n, dtype, salt)
    return total


def check_allreduce(comm):
    r, size = comm.rank, comm.size
    blob = cblob.Blob.from_numpy(inputs(r, 1000, np.float32, 1), copy=True)
    comm.allreduce(blob)
    same_bits(blob.data, serial_sum(1000, np.float32, 1, size), "sum of one float32 blob")
    blob = cblob.Blob.from_numpy(inputs(r, 333, np.float64, 2), copy=True)
    comm.allreduce(blob, op="average")
    same_bits(blob.data, serial_sum(333, np.float64, 2, size) * (1.0 / size), "average of one float64 blob")


def check_fused_list(comm):
    """Mixed dtypes in small buckets, on the diff: several fused engine calls and a blob alone."""
    comm.set_bucket_bytes(256)
    shapes = [(3, 5), (40,), (7,), (100,)]
    dtypes = [np.float32, np.float32, np.int32, np.float32]
    blobs = []
    for salt, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        blob = cblob.Blob(shape, dtype)
        blob.diff[...] = inputs(comm.rank, int(np.prod(shape)), dtype, salt).reshape(shape)
        blob.data[...] = 5
        blobs.append(blob)
    comm.allreduce(blobs, Part.DIFF)
    for salt, (blob, shape, dtype) in enumerate(zip(blobs, shapes, dtypes)):
        same_bits(blob.diff, serial_sum(int(np.prod(shape)), dtype, salt, comm.size).reshape(shape), f"fused blob {salt}")
        assert (blob.data == 5).all(), "the other part is untouched"
    comm.set_bucket_bytes(cblob._raw.COMM_DEFAULT_BUCKET_BYTES)


def check_arena(comm):
    params = [cblob.Blob((4, 3)), cblob.Blob((17,)), cblob.Blob((2, 2, 2))]
    for salt, blob in enumerate(params):
        blob.diff[...] = inputs(comm.rank, blob.count, np.float32, salt).reshape(blob.shape)
    with_padding = sum(-(-b.count // 16) * 16 for b in params)  # 64-byte slices of float32
    grads = cblob.Arena(params, Part.DIFF)
    assert grads.count == with_padding and grads.part == Part.DIFF and grads.members == tuple(params)
    comm.allreduce(grads, op="average")  # the arena's own part
    for salt, blob in enumerate(params):
        expected = serial_sum(blob.count, np.float32, salt, comm.size) * np.float32(1.0 / comm.size)
        same_bits(blob.diff.ravel(), expected, f"arena member {salt}")
    # Members keep working: a write to one shows in the next collective.
    params[1].diff[...] = comm.rank + 1
    comm.allreduce(grads)
    same_bits(params[1].diff, np.full(17, comm.size * (comm.size + 1) / 2, np.float32), "member written after")


def check_broadcast(comm):
    root = comm.size - 1
    blob = cblob.Blob.from_numpy(inputs(comm.rank, 50, np.float32, 9), copy=True)
    other = cblob.Blob.from_numpy(inputs(comm.rank, 7, np.int32, 10), copy=True)
    comm.broadcast([blob, other], root=root)
    same_bits(blob.data, inputs(root, 50, np.float32, 9), "broadcast float32")
    same_bits(other.data, inputs(root, 7, np.int32, 10), "broadcast int32")


def check_requests(comm):
    blob = cblob.Blob.from_numpy(inputs(comm.rank, 4096, np.float32, 3), copy=True)
    request = comm.allreduce_start(blob)
    request.wait()
    request.wait()  # again: the same outcome, nothing done
    same_bits(blob.data, serial_sum(4096, np.float32, 3, comm.size), "non-blocking sum")
    with comm.broadcast_start(blob, root=0):
        pass
    with comm.barrier_start() as barrier:
        assert isinstance(barrier, cblob.Request)
    # Dropped without a wait: freeing it waits, so the next collective lines up on every rank.
    comm.allreduce_start(blob)
    comm.barrier()
    same_bits(blob.data, serial_sum(4096, np.float32, 3, comm.size) * comm.size, "request dropped unwaited")


def check_timeout(comm):
    """Rank 1 stays away from a collective: rank 0 times out, and its communicator is broken."""
    if comm.rank == 1:
        return
    comm.set_timeout(0.3)
    blob = cblob.Blob.from_numpy(np.ones(8, np.float32))
    try:
        comm.allreduce(blob)
    except cblob.CommTimeoutError as e:
        assert isinstance(e, TimeoutError) and e.status == cblob.Status.TIMEOUT, e
    else:
        raise AssertionError("an all-reduce that rank 1 never joins returned")
    try:
        comm.barrier()
    except cblob.CommTimeoutError:
        raise AssertionError("a broken communicator fails at once, with CommError") from None
    except cblob.CommError:
        pass
    else:
        raise AssertionError("a broken communicator made a barrier")
    cblob.finalize_mpi()  # before the communicator closes: MPI may still write into the blob
    cblob.finalize_mpi()  # again: nothing to do
    print("rank 0: a collective rank 1 never joins: CommTimeoutError, then CommError: ok", flush=True)


def run(comm, name):
    assert comm.size == 2, f"{name}: run under mpirun -np 2, not {comm.size}"
    comm.set_timeout(60)
    for check in (check_allreduce, check_fused_list, check_arena, check_broadcast, check_requests):
        check(comm)
    print(f"rank {comm.rank}: {name}: all-reduce, fused list, arena, broadcast, requests: ok", flush=True)


def main():
    try:
        from mpi4py import MPI
    except ImportError:
        print("mpi4py cannot be imported here: Comm.from_mpi(MPI.COMM_WORLD) not run, Comm.from_mpi() is", flush=True)
    else:
        with cblob.Comm.from_mpi(MPI.COMM_WORLD) as comm:
            run(comm, "Comm.from_mpi(MPI.COMM_WORLD)")
            # The same ranks in the same order: mpi4py's numbering is cblob's.
            assert comm.rank == MPI.COMM_WORLD.Get_rank()
    with cblob.Comm.from_mpi() as comm:
        run(comm, "Comm.from_mpi()")
    with cblob.Comm.from_mpi() as comm:  # last: MPI keeps the collective rank 1 never joined
        check_timeout(comm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
