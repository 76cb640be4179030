// SPDX-License-Identifier: BSD-2-Clause
//! The collectives on two ranks, run by bindings/rust/test.sh under `mpirun -np 2` (every rank
//! runs this program; a failed check panics, exits non-zero, and mpirun with it). Each rank
//! computes the serial reference of every collective from every rank's inputs, which it can make
//! itself, and compares its result bit for bit: the results are then identical across ranks too.
use cblob::{Blob, Comm, Context, DType, Element, Part, ReduceOp};
use std::time::Duration;

/// Rank `rank`'s values: exact in every dtype, distinct per rank, element and salt.
fn inputs(rank: i32, n: usize, salt: i64) -> Vec<f64> {
    (0..n as i64).map(|i| ((i * 7 + i64::from(rank) * 1000 + salt * 31) % 977 - 400) as f64 / 8.0).collect()
}

fn serial_sum(size: i32, n: usize, salt: i64) -> Vec<f64> {
    (0..size).fold(vec![0.0; n], |acc, r| acc.iter().zip(inputs(r, n, salt)).map(|(a, b)| a + b).collect())
}

fn filled<T: Element + Copy>(ctx: &Context, dtype: DType, part: Part, values: &[f64], cast: fn(f64) -> T) -> Blob {
    let mut blob = Blob::new(ctx, dtype, &[values.len() as i64]).unwrap();
    let cast: Vec<T> = values.iter().map(|&v| cast(v)).collect();
    if part == Part::Diff {
        blob.diff_mut::<T>().unwrap().copy_from_slice(&cast);
    } else {
        blob.data_mut::<T>().unwrap().copy_from_slice(&cast);
    }
    blob
}

fn f32_bits(blob: &Blob, part: Part) -> Vec<u32> {
    let view = if part == Part::Diff { blob.diff::<f32>().unwrap() } else { blob.data::<f32>().unwrap() };
    view.iter().map(|v| v.to_bits()).collect()
}

fn bits(values: &[f64]) -> Vec<u32> {
    values.iter().map(|&v| (v as f32).to_bits()).collect()
}

fn run(ctx: &Context, comm: &Comm) {
    let (rank, size) = (comm.rank(), comm.size());
    assert_eq!(size, 2, "run under mpirun -np 2");
    comm.set_timeout(Some(Duration::from_secs(60))).unwrap();

    // One blob: the sum, and the average of a float64 blob.
    let mut a = filled(ctx, DType::Float32, Part::Data, &inputs(rank, 1000, 1), |v| v as f32);
    comm.allreduce(&mut [&mut a], Part::Data, ReduceOp::Sum).unwrap();
    assert_eq!(f32_bits(&a, Part::Data), bits(&serial_sum(size, 1000, 1)), "sum of one float32 blob");
    let mut d = filled(ctx, DType::Float64, Part::Data, &inputs(rank, 333, 2), |v| v);
    comm.allreduce(&mut [&mut d], Part::Data, ReduceOp::Average).unwrap();
    let expected: Vec<u64> = serial_sum(size, 333, 2).iter().map(|v| (v * (1.0 / f64::from(size))).to_bits()).collect();
    assert_eq!(d.data::<f64>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), expected, "average of float64");

    // A fused list of mixed dtypes in small buckets, on the diff.
    comm.set_bucket_bytes(256).unwrap();
    let mut x = filled(ctx, DType::Float32, Part::Diff, &inputs(rank, 15, 3), |v| v as f32);
    let mut y = filled(ctx, DType::Float32, Part::Diff, &inputs(rank, 40, 4), |v| v as f32);
    let mut k = filled(ctx, DType::Int32, Part::Diff, &inputs(rank, 7, 5).iter().map(|v| v * 8.0).collect::<Vec<_>>(), |v| v as i32);
    let mut z = filled(ctx, DType::Float32, Part::Diff, &inputs(rank, 100, 6), |v| v as f32);
    comm.allreduce(&mut [&mut x, &mut y, &mut k, &mut z], Part::Diff, ReduceOp::Sum).unwrap();
    assert_eq!(f32_bits(&x, Part::Diff), bits(&serial_sum(size, 15, 3)), "fused x");
    assert_eq!(f32_bits(&y, Part::Diff), bits(&serial_sum(size, 40, 4)), "fused y");
    assert_eq!(f32_bits(&z, Part::Diff), bits(&serial_sum(size, 100, 6)), "fused z (alone)");
    let ints: Vec<i32> = serial_sum(size, 7, 5).iter().map(|v| (v * 8.0) as i32).collect();
    assert_eq!(&*k.diff::<i32>().unwrap(), &ints[..], "fused int32");
    comm.set_bucket_bytes(i64::from(cblob::COMM_DEFAULT_BUCKET_BYTES)).unwrap();

    // An arena of three blobs' diffs, averaged.
    let mut p = filled(ctx, DType::Float32, Part::Diff, &inputs(rank, 12, 7), |v| v as f32);
    let mut q = filled(ctx, DType::Float32, Part::Diff, &inputs(rank, 17, 8), |v| v as f32);
    let mut r = filled(ctx, DType::Float32, Part::Diff, &inputs(rank, 8, 9), |v| v as f32);
    let mut grads = Blob::arena(&mut [&mut p, &mut q, &mut r], Part::Diff, 64).unwrap();
    assert_eq!(grads.count(), 16 + 32 + 16, "64-byte slices");
    comm.allreduce(&mut [&mut grads], Part::Diff, ReduceOp::Average).unwrap();
    for (blob, n, salt) in [(&p, 12, 7), (&q, 17, 8), (&r, 8, 9)] {
        let expected: Vec<u32> = serial_sum(size, n, salt).iter().map(|v| ((*v as f32) * (1.0 / size as f32)).to_bits()).collect();
        assert_eq!(f32_bits(blob, Part::Diff), expected, "arena member of salt {salt}");
    }
    // A member written afterwards takes part in the next collective.
    q.diff_mut::<f32>().unwrap().fill(rank as f32 + 1.0);
    comm.allreduce(&mut [&mut grads], Part::Diff, ReduceOp::Sum).unwrap();
    assert!(q.diff::<f32>().unwrap().iter().all(|&v| v == 3.0), "member written after the arena");

    // Broadcast from the last rank.
    let root = size - 1;
    let mut b = filled(ctx, DType::Float32, Part::Data, &inputs(rank, 50, 10), |v| v as f32);
    comm.broadcast(&mut [&mut b], Part::Data, root).unwrap();
    assert_eq!(f32_bits(&b, Part::Data), bits(&inputs(root, 50, 10)), "broadcast");

    // Requests: wait, and drop without a wait (which waits).
    let mut n = filled(ctx, DType::Float32, Part::Data, &inputs(rank, 4096, 11), |v| v as f32);
    {
        let mut list = [&mut n];
        let request = comm.allreduce_start(&mut list, Part::Data, ReduceOp::Sum).unwrap();
        request.wait().unwrap();
    }
    assert_eq!(f32_bits(&n, Part::Data), bits(&serial_sum(size, 4096, 11)), "non-blocking sum");
    {
        let mut list = [&mut n];
        let _dropped = comm.broadcast_start(&mut list, Part::Data, 0).unwrap();
    }
    comm.barrier_start().unwrap().wait().unwrap();
    comm.barrier().unwrap();
    println!("rank {rank}: all-reduce, average, fused list, arena, broadcast, requests: ok");
}

/// Rank 1 stays away from a collective: rank 0 times out, and its communicator is broken. Last:
/// MPI keeps the collective rank 1 never joined.
fn timeout(ctx: &Context, comm: &Comm) {
    if comm.rank() == 1 {
        return;
    }
    comm.set_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut blob = Blob::new(ctx, DType::Float32, &[8]).unwrap();
    let err = comm.allreduce(&mut [&mut blob], Part::Data, ReduceOp::Sum).unwrap_err();
    assert_eq!(err.status(), cblob::Status::Timeout, "{err}");
    assert_eq!(comm.barrier().unwrap_err().status(), cblob::Status::Comm, "a broken communicator");
    cblob::finalize_mpi().unwrap(); // before the communicator drops: MPI may still write into the blob
    cblob::finalize_mpi().unwrap(); // again: nothing to do
    println!("rank 0: a collective rank 1 never joins: Timeout, then Comm: ok");
}

fn main() {
    let ctx = Context::new().unwrap();
    run(&ctx, &Comm::mpi_world(&ctx).unwrap());
    timeout(&ctx, &Comm::mpi_world(&ctx).unwrap());
}
