# SPDX-License-Identifier: BSD-2-Clause
"""Arenas and communicators: the collectives on two ranks under mpirun (mpi_two_ranks.py), and in
this process (a world of one rank, MPI's singleton start) the errors of bad input, which change
nothing and leave the communicator usable."""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cblob
from cblob import Part

HERE = Path(__file__).resolve().parent


def mpi_or_skip():
    if os.environ.get("CBLOB_MPI_MISSING"):
        pytest.skip(f"libcblob_mpi is not built: {os.environ['CBLOB_MPI_MISSING']}")
    try:
        cblob._comm.mpi_library()
    except cblob.StateError as e:
        pytest.skip(f"libcblob_mpi is not available: {e.message}")


@pytest.fixture(scope="module")
def comm():
    mpi_or_skip()
    with cblob.Comm.from_mpi() as comm:
        yield comm


def mpirun_or_skip():
    words = shlex.split(os.environ.get("CBLOB_MPIEXEC", ""))
    if not words:
        found = shutil.which("mpirun")
        if found is None:
            pytest.skip("no mpirun on PATH (and CBLOB_MPIEXEC is not set)")
        words = [found, "--oversubscribe"]
    return words


def test_two_ranks_allreduce_broadcast_arena_requests_timeout():
    mpi_or_skip()
    launcher = mpirun_or_skip()
    # Not what this process's own MPI start put in its environment: mpirun starts a job of its own.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "OPAL_"))}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               CBLOB_MPI_LIBRARY=cblob._comm.mpi_library_path())
    done = subprocess.run([*launcher, "-np", "2", sys.executable, str(HERE / "mpi_two_ranks.py")],
                          env=env, capture_output=True, text=True, timeout=120)
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    try:  # over mpi4py's communicator too where it can be imported (Debian's, in the NumPy 1 venv)
        import mpi4py  # noqa: F401
        communicators = 2
    except ImportError:
        communicators = 1
    assert done.stdout.count("requests: ok") == 2 * communicators, done.stdout
    assert "CommTimeoutError, then CommError: ok" in done.stdout


# ---- arenas --------------------------------------------------------------------------------------

def test_an_arena_is_a_blob_over_its_members_values():
    params = [cblob.Blob.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), copy=True),
              cblob.Blob.from_numpy(np.full(5, 9, np.float32), copy=True)]
    arena = cblob.Arena(params)
    assert isinstance(arena, cblob.Blob) and arena.part == Part.DATA and arena.count == 32
    assert (arena.data[:6] == np.arange(6)).all() and (arena.data[16:21] == 9).all()
    assert (arena.data[6:16] == 0).all(), "padding is zeros"
    params[0].data[0, 0] = 42  # a member writes its slice
    assert arena.data[0] == 42
    del params  # the arena holds its members
    assert arena.data[16] == 9


def test_an_arena_of_no_blobs_is_invalid():
    with pytest.raises(cblob.InvalidArgumentError, match="cblob_arena_create"):
        cblob.Arena([])


def test_an_arena_of_mixed_dtypes_is_a_dtype_error():
    a, b = cblob.Blob(4, cblob.DType.FLOAT32), cblob.Blob(4, cblob.DType.FLOAT64)
    a.data[...] = 3
    with pytest.raises(cblob.DTypeError, match="cblob_arena_create"):
        cblob.Arena([a, b])
    a.data[0] = 4  # unchanged, still its own memory
    assert list(a.data) == [4, 3, 3, 3]


def test_an_arena_of_a_part_that_is_not_one_is_invalid():
    with pytest.raises(cblob.InvalidArgumentError, match="cblob_arena_create"):
        cblob.Arena([cblob.Blob(4)], part=7)
    with pytest.raises(cblob.InvalidArgumentError):
        cblob.Arena([cblob.Blob(4), np.zeros(4)])
    with pytest.raises(cblob.InvalidArgumentError, match="alignment"):
        cblob.Arena([cblob.Blob(4)], alignment=96)


# ---- one rank --------------------------------------------------------------------------------------

def test_a_world_of_one_rank(comm):
    assert (comm.rank, comm.size) == (0, 1)
    blob = cblob.Blob.from_numpy(np.arange(5, dtype=np.float32), copy=True)
    comm.allreduce(blob, op=cblob.ReduceOp.AVERAGE)
    comm.broadcast(blob, root=0)
    comm.barrier()
    assert list(blob.data) == [0, 1, 2, 3, 4]
    assert "rank 0 of 1" in repr(comm)


def test_bad_collective_arguments_raise_and_leave_the_comm_usable(comm):
    blob = cblob.Blob.from_numpy(np.ones(4, np.int32), copy=True)
    with pytest.raises(cblob.DTypeError, match="cblob_comm_allreduce"):
        comm.allreduce(blob, op="average")  # integers have no average
    with pytest.raises(cblob.InvalidArgumentError):
        comm.allreduce(blob, op="max")
    with pytest.raises(cblob.OutOfRangeError, match="cblob_comm_broadcast"):
        comm.broadcast(blob, root=1)
    with pytest.raises(cblob.InvalidArgumentError, match="cblob_comm_allreduce"):
        comm.allreduce([blob, blob])  # the same memory twice
    with pytest.raises(cblob.InvalidArgumentError):
        comm.allreduce([blob, "not a blob"])
    with pytest.raises(cblob.InvalidArgumentError, match="cblob_comm_allreduce_start"):
        comm.allreduce_start(blob, part=5)
    with pytest.raises(cblob.InvalidArgumentError, match="timeout"):
        comm.set_timeout(-0.001)  # -1 ms would be "forever" to the library
    with pytest.raises(cblob.InvalidArgumentError, match="cblob_comm_set_bucket_bytes"):
        comm.set_bucket_bytes(-1)
    comm.allreduce(blob)  # still usable
    assert list(blob.data) == [1, 1, 1, 1]


def test_an_arena_and_its_member_in_one_collective_is_invalid(comm):
    params = [cblob.Blob(3), cblob.Blob(5)]
    arena = cblob.Arena(params, Part.DIFF)
    with pytest.raises(cblob.InvalidArgumentError):
        comm.allreduce([arena, params[0]], Part.DIFF)
    comm.allreduce(arena)  # the arena's own part: the diff


def test_an_empty_list_is_a_collective_of_nothing(comm):
    comm.allreduce([])
    comm.broadcast_start([]).wait()


def test_a_closed_comm_raises():
    mpi_or_skip()
    comm = cblob.Comm.from_mpi()
    comm.close()
    comm.close()  # twice is fine
    with pytest.raises(cblob.StateError, match="closed"):
        comm.barrier()
    with pytest.raises(TypeError):
        cblob.Comm()


def test_from_mpi_takes_an_mpi4py_communicator():
    mpi_or_skip()
    with pytest.raises(cblob.InvalidArgumentError):
        cblob.Comm.from_mpi("MPI_COMM_WORLD")


def test_an_mpi4py_null_communicator_is_refused_with_libcblob_mpis_message(comm):
    MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py cannot be imported here (Debian's is in the NumPy 1 venv)")
    with pytest.raises(cblob.InvalidArgumentError, match="cblob_comm_create_mpi"):
        cblob.Comm.from_mpi(MPI.COMM_NULL)
    with cblob.Comm.from_mpi(MPI.COMM_WORLD) as world:  # MPI's own world, here of one rank
        assert (world.rank, world.size) == (comm.rank, comm.size)


# ---- NCCL: no GPU here ---------------------------------------------------------------------------

def gpu_expected():
    return os.environ.get("CBLOB_BINDINGS_EXPECT_GPU") == "1"


def test_nccl_without_a_gpu_is_gpu_unavailable():
    if gpu_expected():
        pytest.skip("a GPU (or its test double) is expected: NCCL's errors without one are not what is seen")
    with pytest.raises(cblob.GPUUnavailableError, match="cblob_comm_nccl_unique_id"):
        cblob.Comm.nccl_unique_id()
    with pytest.raises(cblob.GPUUnavailableError, match="cblob_comm_create_nccl"):
        cblob.Comm.from_nccl(bytes(cblob._raw.NCCL_UNIQUE_ID_BYTES), 1, 0)


def test_nccl_over_mpi_without_a_gpu_is_gpu_unavailable(comm):
    MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py cannot be imported here (Debian's is in the NumPy 1 venv)")
    if gpu_expected():
        pytest.skip("a GPU (or its test double) is expected: NCCL's errors without one are not what is seen")
    # Rank 0 could not make the id: libcblob_mpi names its own call and what it was doing (b7c53bb).
    with pytest.raises(cblob.GPUUnavailableError, match="cblob_comm_create_nccl_mpi: making the NCCL unique id"):
        cblob.Comm.from_nccl_mpi(MPI.COMM_WORLD)
    with pytest.raises(cblob.InvalidArgumentError):
        cblob.Comm.from_nccl_mpi(None)


def test_an_nccl_id_of_the_wrong_size_is_invalid():
    with pytest.raises(cblob.InvalidArgumentError, match="128 bytes"):
        cblob.Comm.from_nccl(b"short", 1, 0)
