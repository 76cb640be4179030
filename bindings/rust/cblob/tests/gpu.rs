// SPDX-License-Identifier: BSD-2-Clause
//! The GPU calls through the Rust layer. Without a usable GPU every call that needs one fails
//! with a no-GPU status and the library's message, and the calls that do not need one work;
//! with one (or with the test double of the driver, which the binding suites run this file
//! against as well, setting CBLOB_BINDINGS_EXPECT_GPU=1), the calls do their work.
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cblob::dlpack::{self, DLDevice};
use cblob::{Blob, CacheMode, Context, DType, Error, Head, Memory, Mode, Part, Status};

fn expect_gpu() -> bool {
    std::env::var("CBLOB_BINDINGS_EXPECT_GPU").as_deref() == Ok("1")
}

/// Whether the GPU is the test double of the driver (tests/fake_cuda), which may be handed a
/// stream handle it never made.
fn on_the_test_double() -> bool {
    std::env::var("CBLOB_CUDA_DRIVER").map_or(false, |driver| driver.contains("fake_cuda"))
}

fn assert_no_gpu<T: std::fmt::Debug>(result: Result<T, Error>, status: Status) {
    let err = result.unwrap_err();
    assert_eq!(err.status(), status, "{err}");
    assert!(err.is_no_gpu());
    assert!(!err.message().is_empty());
}

#[test]
fn what_works_without_a_gpu_too() -> Result<(), Error> {
    let versions = cblob::gpu::versions()?;
    assert!(versions.driver >= 0 && versions.nvrtc >= 0 && versions.cublas >= 0);
    let report = cblob::gpu::report()?;
    assert!(report.lines().count() >= 3, "{report}");
    let mode = cblob::gpu::kernel_cache_mode()?;
    assert!(matches!(mode, CacheMode::Off | CacheMode::Memory | CacheMode::Disk));
    let _folder = cblob::gpu::kernel_cache_dir()?;

    let mut ctx = Context::new()?;
    assert_eq!((ctx.device(), ctx.stream()), (0, ptr::null_mut()));
    ctx.synchronize()?; // nothing queued
    assert_eq!(ctx.log()?, "");
    ctx.clear_log()?;
    assert_eq!(cblob::gpu::device_name(-1).unwrap_err().status(), Status::InvalidArgument);
    Ok(())
}

#[test]
fn gpu_calls_say_why_there_is_no_gpu_or_work() -> Result<(), Error> {
    match cblob::gpu::probe() {
        Err(e) => {
            assert!(!expect_gpu(), "the test double of the driver was expected: {e}");
            assert!(e.is_no_gpu(), "{e}");
            assert!(e.message().starts_with("cblob_gpu_probe: "), "{e}");
            calls_without_a_gpu(e.status())
        }
        Ok(devices) => {
            assert!(devices >= 1);
            calls_with_a_gpu()
        }
    }
}

/// Every GPU call fails with the status the probe gave, and changes nothing.
fn calls_without_a_gpu(status: Status) -> Result<(), Error> {
    let mut ctx = Context::new()?;
    assert_no_gpu(ctx.set_mode(Mode::Gpu), status);
    assert_no_gpu(ctx.set_device(0), status);
    // SAFETY: NULL is the default stream.
    assert_no_gpu(unsafe { ctx.set_stream(ptr::null_mut()) }, status);
    assert_no_gpu(ctx.warm_up_kernels(0), status);
    assert_no_gpu(cblob::gpu::device_name(0), status);

    let mut blob = Blob::new(&ctx, DType::Float32, &[4])?;
    blob.fill(Part::Data, 1.5)?;
    assert_no_gpu(blob.gpu_ptr(Part::Data), status);
    assert_no_gpu(blob.mutable_gpu_ptr(Part::Diff), status);
    assert_no_gpu(blob.async_push(Part::Data), status);
    assert_no_gpu(blob.to_dlpack(Part::Data, Memory::Device, true), status);
    assert_no_gpu(blob.to_dlpack_legacy(Part::Diff, Memory::Device), status);
    let released = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&released);
    let release: Box<dyn FnOnce() + Send> = Box::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    // SAFETY: the call fails before it could use the pointer.
    let err = unsafe { blob.set_gpu_data(0x1000 as *mut c_void, 16, Some(release)) }.unwrap_err();
    assert!(err.is_no_gpu(), "{err}");
    assert_eq!(Arc::strong_count(&released), 1, "the callback was dropped, not kept");
    assert_eq!(released.load(Ordering::SeqCst), 0, "release never runs after a failure");
    assert_eq!((blob.head(Part::Data)?, blob.asum(Part::Data)?), (Head::AtCpu, 6.0));
    Ok(())
}

/// The calls do their work: device pointers, syncing back, asynchronous pushes, a caller's
/// device buffer with its release callback, GPU mode.
fn calls_with_a_gpu() -> Result<(), Error> {
    assert!(!cblob::gpu::device_name(0)?.is_empty());
    let mut ctx = Context::new()?;
    ctx.set_device(0)?;
    assert_eq!(ctx.device(), 0);
    assert_eq!(ctx.set_device(1).unwrap_err().status(), Status::State, "a context keeps its device");

    let mut blob = Blob::new(&ctx, DType::Float32, &[4])?;
    blob.copy_in(Part::Data, &[1.0f32, 2.0, 3.0, 4.0])?;
    assert!(!blob.gpu_ptr(Part::Data)?.is_null());
    assert_eq!(blob.head(Part::Data)?, Head::Synced);
    assert!(!blob.mutable_gpu_ptr(Part::Data)?.is_null());
    assert_eq!(blob.head(Part::Data)?, Head::AtGpu);
    {
        let view = blob.data::<f32>()?; // copies back
        assert_eq!(&*view, &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(blob.mutable_gpu_ptr(Part::Data).unwrap_err().status(), Status::State, "a view is alive");
    }
    blob.copy_in(Part::Diff, &[1.0f32; 4])?;
    blob.async_push(Part::Diff)?;
    ctx.synchronize()?;
    assert_eq!(blob.head(Part::Diff)?, Head::Synced);
    assert_eq!(blob.async_push(Part::Diff).unwrap_err().status(), Status::State, "only from AT_CPU");

    // A caller's device buffer: here another blob's device memory, which outlives the use.
    let mut donor = Blob::new(&ctx, DType::Float32, &[4])?;
    donor.copy_in(Part::Data, &[5.0f32, 6.0, 7.0, 8.0])?;
    let device = donor.mutable_gpu_ptr(Part::Data)?;
    let released = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&released);
    let mut taker = Blob::new(&ctx, DType::Float32, &[4])?;
    // SAFETY: device memory of this context's device, 16 bytes, alive until taker is dropped.
    let release: Box<dyn FnOnce() + Send> = Box::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    unsafe { taker.set_gpu_data(device, 16, Some(release))? };
    assert_eq!(taker.head(Part::Data)?, Head::AtGpu);
    assert_eq!(taker.to_vec::<f32>(Part::Data)?, [5.0, 6.0, 7.0, 8.0]);
    assert_eq!(released.load(Ordering::SeqCst), 0);
    drop(taker);
    assert_eq!(released.load(Ordering::SeqCst), 1, "released once, when the blob let go");
    // SAFETY: as above; too small for four floats.
    let err = unsafe { Blob::new(&ctx, DType::Float32, &[8])?.set_gpu_data(device, 16, None) }.unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");

    dlpack_with_a_gpu(&ctx)?;

    // GPU mode: memory never accessed is written on the device, and math runs there.
    ctx.set_mode(Mode::Gpu)?;
    let mut on_gpu = Blob::new(&ctx, DType::Float32, &[1000])?;
    on_gpu.fill(Part::Data, 0.5)?;
    assert_eq!(on_gpu.head(Part::Data)?, Head::AtGpu);
    assert_eq!(on_gpu.asum(Part::Data)?, 500.0);
    assert!(ctx.log().is_ok());

    // Host memory allocated in GPU mode is pinned: its DLPack export says kDLCUDAHost.
    let mut pinned = Blob::new(&ctx, DType::Float32, &[3])?;
    pinned.data_mut::<f32>()?.copy_from_slice(&[1.0, 2.0, 3.0]);
    let tensor = pinned.to_dlpack(Part::Data, Memory::Host, true)?;
    assert_eq!(tensor.device(), DLDevice { device_type: dlpack::DEVICE_CUDA_HOST, device_id: 0 });
    // SAFETY: host memory nothing writes while the slice lives.
    assert_eq!(unsafe { tensor.host_slice::<f32>()? }, [1.0, 2.0, 3.0]);

    // Compiling for an architecture goes to the disk cache only.
    if cblob::gpu::kernel_cache_mode()? != CacheMode::Disk {
        assert_eq!(ctx.warm_up_kernels(80).unwrap_err().status(), Status::State);
    }
    Ok(())
}

/// DLPack exports of the device copy: kDLCUDA on the context's device, the head moved as the
/// device accessors move it, and a CUDA tensor taken back in as device data. The device memory
/// is only read through cblob (the double's is not host-readable).
fn dlpack_with_a_gpu(ctx: &Context) -> Result<(), Error> {
    let mut blob = Blob::new(ctx, DType::Float32, &[4])?;
    blob.copy_in(Part::Data, &[1.0f32, 2.0, 3.0, 4.0])?;
    let tensor = blob.to_dlpack(Part::Data, Memory::Device, true)?;
    assert_eq!(tensor.device(), DLDevice { device_type: dlpack::DEVICE_CUDA, device_id: ctx.device() });
    assert_eq!((tensor.is_read_only(), tensor.shape()), (true, &[4i64][..]));
    assert_eq!(blob.head(Part::Data)?, Head::Synced, "a read, as gpu_ptr");
    assert_eq!(tensor.data().cast_const(), blob.gpu_ptr(Part::Data)?);
    // SAFETY: nothing is read: the call refuses device memory.
    assert_eq!(unsafe { tensor.host_slice::<f32>() }.unwrap_err().status(), Status::InvalidArgument);

    let legacy = blob.to_dlpack_legacy(Part::Data, Memory::Device)?;
    assert_eq!(blob.head(Part::Data)?, Head::AtGpu, "a write, as mutable_gpu_ptr");
    assert_eq!(legacy.data(), tensor.data());
    drop(legacy);

    // Into a blob of another context: the device copy is the data (head AT_GPU), shared.
    let other = Context::new()?;
    let mut back = Blob::from_dlpack(&other, blob.to_dlpack(Part::Data, Memory::Device, false)?)?;
    assert_eq!(back.head(Part::Data)?, Head::AtGpu);
    assert_eq!(back.gpu_ptr(Part::Data)?, tensor.data().cast_const());
    assert_eq!(back.to_vec::<f32>(Part::Data)?, [1.0, 2.0, 3.0, 4.0]);
    back.scale(Part::Data, 2.0)?;
    assert_eq!(blob.to_vec::<f32>(Part::Data)?, [2.0, 4.0, 6.0, 8.0]);

    // On a stream: the importing context's own adds no wait, the legacy default (null) and the
    // per-thread default (2) are waited for; each takes the device tensor in as device data.
    for stream in [other.stream(), std::ptr::null_mut(), 2usize as *mut std::ffi::c_void] {
        let device = blob.to_dlpack(Part::Data, Memory::Device, false)?;
        // SAFETY: the context's stream, or one of the driver's special handles.
        let on_stream = unsafe { Blob::from_dlpack_on_stream(&other, device, stream)? };
        assert_eq!(on_stream.gpu_ptr(Part::Data)?, tensor.data().cast_const());
        assert_eq!(on_stream.to_vec::<f32>(Part::Data)?, [2.0, 4.0, 6.0, 8.0]);
    }
    if on_the_test_double() {
        // A handle the driver does not know: only the double can be handed one safely.
        let device = blob.to_dlpack(Part::Data, Memory::Device, false)?;
        // SAFETY: the double looks the handle up in its table of streams.
        let refused = unsafe { Blob::from_dlpack_on_stream(&other, device, 0x5eed0 as *mut std::ffi::c_void) }.unwrap_err();
        assert_eq!(refused.error().status(), Status::InvalidArgument, "{refused}");
        assert!(!refused.into_tensor().data().is_null(), "the refused tensor is the caller's");
    }

    // The tensor outlives its blob (it holds the device memory).
    drop((blob, back));
    assert!(!tensor.data().is_null());
    drop(tensor);
    Ok(())
}
