// SPDX-License-Identifier: BSD-2-Clause
//! The bindings' common scenario, blob part (create, reshape, fill, update, asum, sharing, a bad
//! shape as an error), plus what is particular to the Rust layer: typed views, view tracking
//! across shared memory, threads. The formats part is in formats.rs, the GPU part in gpu.rs.
use std::thread;

use cblob::{Blob, Context, DType, Error, Head, Mode, Part, Status};

fn ctx() -> Context {
    Context::new().expect("a context")
}

fn float_blob(ctx: &Context, shape: &[i64]) -> Blob {
    Blob::new(ctx, DType::Float32, shape).expect("a float32 blob")
}

#[test]
fn library_identifies_itself() {
    let (major, minor) = cblob::abi_version();
    assert_eq!(major as i32, cblob::ABI_VERSION_MAJOR);
    assert!(minor as i32 >= cblob::ABI_VERSION_MINOR);
    assert_eq!(cblob::version().split('.').count(), 3, "version {}", cblob::version());
    assert!(cblob::blas_info().contains("BLIS"), "{}", cblob::blas_info());
    assert!(!cblob::cpu_features().is_empty());
}

#[test]
fn create_reshape_fill_update_asum() -> Result<(), Error> {
    let ctx = ctx();
    let mut blob = float_blob(&ctx, &[2, 3, 4]);
    assert_eq!((blob.count(), blob.num_axes(), blob.shape()), (24, 3, vec![2, 3, 4]));
    assert_eq!(blob.head(Part::Data)?, Head::Uninitialized);

    blob.reshape(&[3, 4])?;
    assert_eq!(blob.shape(), [3, 4]);
    assert_eq!(blob.shape_string(), "3 4 (12)");
    assert_eq!(blob.capacity(), 24, "shrinking keeps the storage");
    assert_eq!((blob.shape_at(-1)?, blob.count_range(1, 2)?, blob.canonical_axis(-2)?), (4, 4, 0));
    assert_eq!(blob.offset(&[2, 1])?, 9);

    {
        let (mut data, mut diff) = blob.data_and_diff_mut::<f32>()?;
        assert_eq!((data.len(), diff.len()), (12, 12));
        for (i, x) in data.iter_mut().enumerate() {
            *x = i as f32;
        }
        diff.fill(0.5);
    }
    assert_eq!(blob.head(Part::Data)?, Head::AtCpu);
    blob.update()?;
    let expected: Vec<f32> = (0..12).map(|i| i as f32 - 0.5).collect();
    assert_eq!(&*blob.data::<f32>()?, expected.as_slice());
    let asum: f64 = expected.iter().map(|x| x.abs() as f64).sum();
    assert_eq!(blob.asum(Part::Data)?, asum);
    assert_eq!(blob.sumsq(Part::Diff)?, 12.0 * 0.25);
    assert_eq!(blob.read_element(Part::Data, &[2, 3])?, 10.5);

    blob.scale(Part::Diff, 4.0)?;
    assert!(blob.diff::<f32>()?.iter().all(|&x| x == 2.0));
    Ok(())
}

#[test]
fn legacy_shapes() -> Result<(), Error> {
    let ctx = ctx();
    let mut blob = Blob::new_legacy(&ctx, DType::Float64, 2, 3, 4, 5)?;
    assert_eq!((blob.num()?, blob.channels()?, blob.height()?, blob.width()?), (2, 3, 4, 5));
    assert_eq!(blob.offset_legacy(1, 2, 3, 4)?, 119);
    assert_eq!(blob.offset_legacy(2, 0, 0, 0).unwrap_err().status(), Status::OutOfRange);
    blob.reshape_legacy(1, 1, 2, 2)?;
    assert_eq!((blob.legacy_shape(-1)?, blob.count()), (2, 4));

    let mut empty = Blob::new_empty(&ctx, DType::Float64)?;
    assert_eq!((empty.count(), empty.num_axes()), (0, 0));
    assert!(empty.data::<f64>()?.is_empty(), "a blob without elements views as an empty slice");
    empty.reshape_like(&blob)?;
    assert_eq!(empty.shape(), blob.shape());
    Ok(())
}

#[test]
fn bad_shape_is_an_error_with_the_library_message_and_changes_nothing() {
    let ctx = ctx();
    let err = Blob::new(&ctx, DType::Float32, &[2, -3]).unwrap_err();
    assert_eq!(err.status(), Status::Shape);
    assert_eq!(err.code(), cblob::sys::CBLOB_ERR_SHAPE);
    assert_eq!(err.status_name(), "CBLOB_ERR_SHAPE");
    assert!(err.message().starts_with("cblob_blob_create: "), "{err}");
    assert!(err.message().contains("shape[1] is -3"), "{err}");
    assert!(err.to_string().ends_with("(CBLOB_ERR_SHAPE)"), "{err}");

    let mut blob = float_blob(&ctx, &[5]);
    let too_many = vec![1i64; 33];
    assert_eq!(blob.reshape(&too_many).unwrap_err().status(), Status::Shape);
    assert_eq!(blob.reshape(&[i64::MAX, 4]).unwrap_err().status(), Status::Overflow);
    assert_eq!(blob.shape(), [5]);
    assert_eq!(blob.shape_at(3).unwrap_err().status(), Status::OutOfRange);
}

#[test]
fn dtype_is_checked() -> Result<(), Error> {
    let ctx = ctx();
    let mut ints = Blob::new(&ctx, DType::Int32, &[3])?;
    assert_eq!(ints.dtype()?, DType::Int32);
    let err = ints.data::<f32>().unwrap_err();
    assert_eq!(err.status(), Status::DType);
    assert!(err.message().contains("Int32"), "{err}");
    ints.data_mut::<i32>()?.copy_from_slice(&[1, -2, 3]);
    assert_eq!(&*ints.data::<i32>()?, &[1, -2, 3]);
    // Caffe leaves integer math undefined; so does cblob.
    assert_eq!(ints.asum(Part::Data).unwrap_err().status(), Status::NotImplemented);

    let mut uints = Blob::new(&ctx, DType::Uint32, &[2])?;
    uints.data_mut::<u32>()?.copy_from_slice(&[7, u32::MAX]);
    assert_eq!(uints.read_element(Part::Data, &[1])?, u32::MAX as f64);

    let floats = float_blob(&ctx, &[3]);
    let mut doubles = Blob::new(&ctx, DType::Float64, &[3])?;
    assert_eq!(doubles.share_data(&floats).unwrap_err().status(), Status::DType);
    Ok(())
}

#[test]
fn share_data_between_two_blobs() -> Result<(), Error> {
    let ctx = ctx();
    let mut a = float_blob(&ctx, &[2, 3]);
    let mut b = float_blob(&ctx, &[6]);
    a.data_mut::<f32>()?.copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    b.share_data(&a)?;
    assert_eq!(&*b.data::<f32>()?, &*a.data::<f32>()?);
    b.data_mut::<f32>()?[0] = -10.0;
    assert_eq!(a.data::<f32>()?[0], -10.0, "one memory");
    assert_eq!(b.diff::<f32>()?[0], 0.0, "diffs stay separate");

    // A counted view of one blob stops a mutable view of the other: no aliasing &mut.
    let read = a.data::<f32>()?;
    let err = b.data_mut::<f32>().unwrap_err();
    assert_eq!(err.status(), Status::State);
    assert!(err.message().contains("a view of it is still alive"), "{err}");
    assert_eq!(b.scale(Part::Data, 2.0).unwrap_err().status(), Status::State);
    assert_eq!(b.data::<f32>()?[0], -10.0, "read views may overlap");
    drop(read);
    b.scale(Part::Data, 2.0)?;
    assert_eq!(a.data::<f32>()?[0], -20.0);

    // Growing past the capacity gives fresh storage and ends the sharing.
    b.reshape(&[100])?;
    let _a_view = a.data::<f32>()?;
    b.data_mut::<f32>()?.fill(1.0);
    assert_eq!(a.data::<f32>()?[1], 4.0);

    // Dropping the blob that made the memory leaves it alive for the other.
    let mut c = float_blob(&ctx, &[6]);
    c.share_data(&a)?;
    drop(_a_view);
    drop(a);
    assert_eq!(c.data::<f32>()?[5], 12.0);

    let mut wrong_count = float_blob(&ctx, &[7]);
    assert_eq!(wrong_count.share_data(&c).unwrap_err().status(), Status::Shape);
    Ok(())
}

#[test]
fn copy_from_and_set_cpu_data() -> Result<(), Error> {
    let ctx = ctx();
    let mut src = float_blob(&ctx, &[4]);
    src.data_mut::<f32>()?.copy_from_slice(&[1.0, -2.0, 3.0, -4.0]);
    let mut dst = float_blob(&ctx, &[2]);
    assert_eq!(dst.copy_from(&src, Part::Data, false).unwrap_err().status(), Status::Shape);
    dst.copy_from(&src, Part::Data, true)?;
    assert_eq!(dst.shape(), [4]);
    assert_eq!(&*dst.data::<f32>()?, &[1.0, -2.0, 3.0, -4.0]);

    let buffer = vec![0.5f32, 1.5, 2.5, 3.5];
    let address = buffer.as_ptr();
    dst.set_cpu_data(buffer)?;
    assert_eq!(dst.data::<f32>()?.as_ptr(), address, "no copy");
    assert_eq!(dst.asum(Part::Data)?, 8.0);
    let err = dst.set_cpu_data(vec![1.0f32; 3]).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("size_bytes is 12"), "{err}");
    assert_eq!(dst.set_cpu_data(vec![1.0f64; 4]).unwrap_err().status(), Status::DType);
    assert_eq!(dst.data::<f32>()?.as_ptr(), address, "a failed call changes nothing");
    dst.set_cpu_data(vec![9.0f32; 4])?; // the library drops the first vector here
    assert_eq!(dst.asum(Part::Data)?, 36.0);
    Ok(())
}

#[test]
fn update_of_memory_never_written_is_a_state_error() {
    let ctx = ctx();
    let mut blob = float_blob(&ctx, &[3]);
    let err = blob.update().unwrap_err();
    assert_eq!(err.status(), Status::State);
    assert!(err.message().starts_with("cblob_blob_update: "), "{err}");
}

#[test]
fn gpu_mode_without_a_gpu_says_why_and_keeps_cpu_mode() {
    let mut ctx = ctx();
    match ctx.set_mode(Mode::Gpu) {
        Ok(()) => assert_eq!(ctx.mode().unwrap(), Mode::Gpu),
        Err(err) => {
            let no_gpu = [Status::NoDriver, Status::StubDriver, Status::NoDevice, Status::DriverTooOld];
            assert!(no_gpu.contains(&err.status()), "{err}");
            assert!(!err.message().is_empty());
            assert_eq!(ctx.mode().unwrap(), Mode::Cpu);
        }
    }
}

#[test]
fn blobs_move_between_threads_and_errors_stay_per_thread() -> Result<(), Error> {
    let ctx = ctx();
    let mut blob = float_blob(&ctx, &[1000]);
    blob.data_mut::<f32>()?.fill(1.0);
    let worker = thread::spawn(move || {
        let err = blob.reshape(&[-1]).unwrap_err();
        assert!(err.message().contains("shape[0] is -1"), "{err}");
        blob.asum(Part::Data).map(|s| (s, blob))
    });
    let err = Blob::new(&ctx, DType::Float32, &[-7]).unwrap_err();
    assert!(err.message().contains("shape[0] is -7"), "this thread's message: {err}");
    let (sum, blob) = worker.join().expect("worker")?;
    assert_eq!((sum, blob.count()), (1000.0, 1000));
    Ok(())
}

#[test]
fn sharing_blobs_on_two_threads_are_serialised() -> Result<(), Error> {
    // Conflicting uses of one memory from two threads fail with State instead of racing; any
    // other outcome (another error, torn data) fails the test.
    fn tolerate_conflict<T>(result: Result<T, Error>, conflicts: &mut u32) -> Result<(), Error> {
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.status() == Status::State => {
                *conflicts += 1;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
    let ctx = ctx();
    let mut a = float_blob(&ctx, &[64]);
    let mut b = float_blob(&ctx, &[64]);
    b.share_data(&a)?;
    a.data_mut::<f32>()?.fill(1.0);
    let worker = thread::spawn(move || -> Result<(Blob, u32), Error> {
        let mut conflicts = 0;
        for _ in 0..200 {
            tolerate_conflict(b.scale(Part::Data, 1.0), &mut conflicts)?;
            tolerate_conflict(b.data::<f32>().map(|v| assert!(v.iter().all(|&x| x == 1.0))), &mut conflicts)?;
        }
        Ok((b, conflicts))
    });
    let mut conflicts = 0;
    for _ in 0..200 {
        tolerate_conflict(a.data_mut::<f32>().map(|mut v| v.fill(1.0)), &mut conflicts)?;
    }
    let (b, theirs) = worker.join().expect("worker")?;
    assert_eq!(b.asum(Part::Data)?, 64.0, "{} conflicts", conflicts + theirs);
    Ok(())
}
