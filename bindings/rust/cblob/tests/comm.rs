// SPDX-License-Identifier: BSD-2-Clause
//! Arenas, and communicators in one process (a world of one rank: MPI's singleton start): bad
//! input gives errors that change nothing. The collectives on two ranks are
//! examples/mpi_two_ranks.rs, which test.sh runs under mpirun.
use cblob::{Blob, Comm, Context, DType, Part, ReduceOp, Status};

fn blob(ctx: &Context, dtype: DType, n: i64) -> Blob {
    Blob::new(ctx, dtype, &[n]).unwrap()
}

/// A world of one rank, or None (with the reason printed) when libcblob_mpi is not available.
fn world(ctx: &Context) -> Option<Comm> {
    if let Ok(why) = std::env::var("CBLOB_MPI_MISSING") {
        println!("SKIPPED: libcblob_mpi is not built: {why}");
        return None;
    }
    match Comm::mpi_world(ctx) {
        Ok(comm) => Some(comm),
        Err(e) if e.status() == Status::State && e.message().contains("cannot load") => {
            println!("SKIPPED: {}", e.message());
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn an_arena_holds_its_members_values_and_counts_their_views_as_its_own() {
    let ctx = Context::new().unwrap();
    let (mut a, mut b) = (blob(&ctx, DType::Float32, 6), blob(&ctx, DType::Float32, 5));
    a.data_mut::<f32>().unwrap().copy_from_slice(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    b.data_mut::<f32>().unwrap().fill(9.0);
    let arena = Blob::arena(&mut [&mut a, &mut b], Part::Data, 64).unwrap();
    assert_eq!(arena.count(), 32);
    {
        let all = arena.data::<f32>().unwrap();
        assert_eq!(&all[..7], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0]);
        assert_eq!(&all[16..21], &[9.0; 5]);
        // The arena's view and a member's mutable view would alias: refused.
        assert_eq!(a.data_mut::<f32>().unwrap_err().status(), Status::State);
    }
    a.data_mut::<f32>().unwrap()[0] = 42.0;
    drop((a, b)); // the arena holds its members
    assert_eq!(arena.data::<f32>().unwrap()[0], 42.0);
}

#[test]
fn arenas_of_nothing_mixed_dtypes_or_a_bad_alignment_are_errors_that_change_nothing() {
    let ctx = Context::new().unwrap();
    let err = Blob::arena(&mut [], Part::Diff, 64).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("cblob_arena_create"), "{err}");
    let (mut a, mut d) = (blob(&ctx, DType::Float32, 4), blob(&ctx, DType::Float64, 4));
    a.diff_mut::<f32>().unwrap().fill(3.0);
    assert_eq!(Blob::arena(&mut [&mut a, &mut d], Part::Diff, 64).unwrap_err().status(), Status::DType);
    assert_eq!(Blob::arena(&mut [&mut a], Part::Diff, 96).unwrap_err().status(), Status::InvalidArgument);
    assert_eq!(&*a.diff::<f32>().unwrap(), &[3.0; 4]);
}

#[test]
fn a_world_of_one_rank_refuses_bad_collectives_and_stays_usable() {
    let ctx = Context::new().unwrap();
    let Some(comm) = world(&ctx) else { return };
    assert_eq!((comm.rank(), comm.size()), (0, 1));
    let mut ints = blob(&ctx, DType::Int32, 4);
    ints.data_mut::<i32>().unwrap().fill(1);
    let err = comm.allreduce(&mut [&mut ints], Part::Data, ReduceOp::Average).unwrap_err();
    assert_eq!(err.status(), Status::DType);
    assert!(err.message().starts_with("cblob_comm_allreduce"), "{err}");
    assert_eq!(comm.broadcast(&mut [&mut ints], Part::Data, 1).unwrap_err().status(), Status::OutOfRange);
    assert_eq!(comm.set_bucket_bytes(-1).unwrap_err().status(), Status::InvalidArgument);
    // An arena and its member: the same memory twice.
    let (mut p, mut q) = (blob(&ctx, DType::Float32, 3), blob(&ctx, DType::Float32, 5));
    let mut arena = Blob::arena(&mut [&mut p, &mut q], Part::Diff, 64).unwrap();
    let err = comm.allreduce(&mut [&mut arena, &mut p], Part::Diff, ReduceOp::Sum).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    // Still usable; an empty list is a collective of nothing.
    comm.allreduce(&mut [&mut ints], Part::Data, ReduceOp::Sum).unwrap();
    comm.allreduce(&mut [], Part::Data, ReduceOp::Sum).unwrap();
    comm.allreduce(&mut [&mut arena], Part::Diff, ReduceOp::Average).unwrap();
    assert_eq!(&*ints.data::<i32>().unwrap(), &[1; 4]);
}

#[test]
fn a_request_holds_its_blobs_memory_until_it_ends() {
    let ctx = Context::new().unwrap();
    let Some(comm) = world(&ctx) else { return };
    let (mut p, mut q) = (blob(&ctx, DType::Float32, 3), blob(&ctx, DType::Float32, 5));
    let mut arena = Blob::arena(&mut [&mut p, &mut q], Part::Diff, 64).unwrap();
    {
        let mut list = [&mut arena];
        let request = comm.allreduce_start(&mut list, Part::Diff, ReduceOp::Sum).unwrap();
        // A member shares the arena's memory: no view of it while the collective runs.
        assert_eq!(p.diff::<f32>().unwrap_err().status(), Status::State);
        request.wait().unwrap();
    }
    assert_eq!(&*p.diff::<f32>().unwrap(), &[0.0; 3]);
}

#[test]
fn nccl_without_a_gpu_says_why() {
    if std::env::var("CBLOB_BINDINGS_EXPECT_GPU").as_deref() == Ok("1") {
        println!("SKIPPED: a GPU (or its test double) is expected here");
        return;
    }
    let err = Comm::nccl_unique_id().unwrap_err();
    assert!(err.is_no_gpu() || err.status() == Status::NcclMissing, "{err}");
    assert!(err.message().starts_with("cblob_comm_nccl_unique_id"), "{err}");
    let ctx = Context::new().unwrap();
    let err = Comm::nccl(&ctx, &[0; cblob::NCCL_UNIQUE_ID_BYTES as usize], 1, 0).unwrap_err();
    assert!(err.is_no_gpu() || err.status() == Status::NcclMissing, "{err}");
}
