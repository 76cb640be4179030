// SPDX-License-Identifier: BSD-2-Clause
//! Files of any kind (File), the model a file lends, the .npy writers, replace_blobs_with, and
//! errors' function and detail.
mod common;

use cblob::{Blob, Context, DType, ExportFlags, File, FileKind, Net, Part, ReplaceFlags, Status};

fn sample() -> std::path::PathBuf {
    common::source_dir().join("samples/tiny_lenet.caffemodel")
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cblob-rust-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

#[test]
fn a_file_of_each_kind_and_its_borrowed_model() -> cblob::Result<()> {
    let ctx = Context::new()?;
    assert_eq!(cblob::detect_kind(sample())?, FileKind::Net);
    let file = File::open(&ctx, sample(), &[], None)?;
    assert_eq!(file.kind()?, FileKind::Net);
    let model = file.model()?; // a plain value: outlives the file
    {
        let net = file.net()?;
        assert_eq!(net.layer_name(1)?, "conv1");
        assert_eq!(net.read_blob::<f32>(1, 0, Part::Data)?, model.layer("conv1").expect("conv1").blobs[0].data::<f32>()?.to_vec());
    }
    assert_eq!(file.num_blobs().unwrap_err().status(), Status::State);
    let dir = temp_dir("kinds");
    let npz = dir.join("m.npz");
    file.net()?.save_npz(&npz, &[])?;
    let folder = dir.join("npy");
    assert!(file.save_npy_folder(&folder, &[])? > 0);
    for (path, kind) in [(npz, FileKind::Npz), (folder, FileKind::NpyFolder)] {
        let other = File::open(&ctx, &path, &[], None)?;
        assert_eq!(other.kind()?, kind);
        let mut base = Net::open_file(&ctx, sample())?;
        let weights = other.net()?;
        assert_eq!(base.replace_blobs_with(&weights, &[ReplaceFlags::All])?, 0);
    }
    drop(file);
    assert_eq!(model.layer("conv1").expect("conv1").blobs[0].shape(), [4, 1, 3, 3]);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

#[test]
fn npy_of_a_blob_and_a_file_of_blobs() -> cblob::Result<()> {
    let ctx = Context::new()?;
    let mut blob = Blob::new(&ctx, DType::Float32, &[2, 3])?;
    blob.data_mut::<f32>()?.copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let bytes = blob.to_npy(Part::Data)?;
    assert!(bytes.starts_with(b"\x93NUMPY"));
    let dir = temp_dir("npy");
    let path = dir.join("b.npy");
    blob.save_npy(&path, Part::Data)?;
    assert_eq!(std::fs::read(&path).expect("the .npy file"), bytes);
    let file = File::open(&ctx, &path, &[], Some(DType::Float64))?;
    assert_eq!(file.kind()?, FileKind::Npy);
    assert_eq!(file.num_blobs()?, 1);
    let read = file.blob(0)?;
    assert_eq!(read.dtype()?, DType::Float64);
    assert_eq!(read.data::<f64>()?.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(file.net().unwrap_err().status(), Status::State);
    assert_eq!(file.blob(1).unwrap_err().status(), Status::OutOfRange);
    let _ = std::fs::remove_dir_all(dir);
    let _ = ExportFlags::Diff;
    Ok(())
}

#[test]
fn errors_carry_the_function_and_the_detail() -> cblob::Result<()> {
    let ctx = Context::new()?;
    let dir = temp_dir("errors");
    let prototxt = dir.join("net.prototxt");
    std::fs::write(&prototxt, "name: \"LeNet\"\nlayer {\n  name: \"data\"\n  type: \"Input\"\n}\n").expect("a prototxt");
    let error = File::open(&ctx, &prototxt, &[], None).unwrap_err();
    assert_eq!(error.status(), Status::Parse);
    assert_eq!(error.function(), "cblob_file_open");
    assert!(error.detail().contains("prototxt"), "{}", error.detail());
    assert_eq!(error.message(), format!("{}: {}", error.function(), error.detail()));
    // An error of the crate's own names no function.
    let own = Blob::new(&ctx, DType::Float32, &[1])?.save_npy(dir.join("a\0b"), Part::Data).unwrap_err();
    assert_eq!(own.function(), "");
    assert!(own.detail().contains("NUL"), "{}", own.detail());
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

// ---- progress and cancellation (Context::set_progress) -------------------------------------------

/// A blob of a few MiB, so that a save reports progress more than twice.
fn big_blob(ctx: &Context) -> cblob::Result<Blob> {
    let mut blob = Blob::new(ctx, DType::Float32, &[3, 1024, 1024])?;
    let values: Vec<f32> = (0..3 * 1024 * 1024).map(|i| i as f32).collect();
    blob.copy_in(Part::Data, &values)?;
    Ok(blob)
}

#[test]
fn progress_is_reported_and_a_stop_cancels_the_save() -> cblob::Result<()> {
    use std::sync::{Arc, Mutex};
    let mut ctx = Context::new()?;
    let blob = big_blob(&ctx)?;
    let dir = temp_dir("progress");
    let path = dir.join("b.npy");

    let calls: Arc<Mutex<Vec<(i64, Option<i64>)>>> = Arc::default();
    let seen = Arc::clone(&calls);
    ctx.set_progress(Some(move |done: i64, total: Option<i64>| {
        seen.lock().unwrap().push((done, total));
        true
    }))?;
    blob.save_npy(&path, Part::Data)?;
    let calls = calls.lock().unwrap().clone();
    assert!(calls.len() > 2, "{calls:?}");
    let total = calls[0].1.expect("a .npy write knows its total");
    assert_eq!(calls[0].0, 0);
    assert_eq!(*calls.last().unwrap(), (total, Some(total)));
    assert_eq!(total, std::fs::metadata(&path).unwrap().len() as i64);
    let saved = std::fs::read(&path).unwrap();

    // A stop fails with Cancelled and leaves the existing file as it was; a new one is not made.
    ctx.set_progress(Some(|done: i64, _total: Option<i64>| done == 0))?;
    let mut other = big_blob(&ctx)?;
    other.copy_in(Part::Data, &vec![7.0f32; 3 * 1024 * 1024])?;
    assert_eq!(other.save_npy(&path, Part::Data).unwrap_err().status(), Status::Cancelled);
    assert_eq!(std::fs::read(&path).unwrap(), saved, "the stopped save left the file unchanged");
    let absent = dir.join("absent.npy");
    let error = other.save_npy(&absent, Part::Data).unwrap_err();
    assert_eq!(error.status(), Status::Cancelled, "{error}");
    assert!(!absent.exists());

    // A panic in the callback stops the call and comes out of it, not out of the library.
    ctx.set_progress(Some(|_: i64, _: Option<i64>| -> bool { panic!("the callback's own panic") }))?;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| other.save_npy(&absent, Part::Data)));
    let payload = caught.expect_err("the panic goes on after the call");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"the callback's own panic"));
    assert!(!absent.exists());

    // None removes the callback: the save goes through.
    ctx.set_progress(None::<fn(i64, Option<i64>) -> bool>)?;
    other.save_npy(&absent, Part::Data)?;
    assert!(absent.exists());
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}

#[test]
fn a_callback_outlived_by_its_blobs_is_not_called() -> cblob::Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = temp_dir("outlived");
    let calls = Arc::new(AtomicUsize::new(0));
    let blob = {
        let mut ctx = Context::new()?;
        let seen = Arc::clone(&calls);
        ctx.set_progress(Some(move |_: i64, _: Option<i64>| {
            seen.fetch_add(1, Ordering::Relaxed);
            false
        }))?;
        Blob::new(&ctx, DType::Float32, &[4])?
    }; // the Context is dropped; the blob keeps its context handle alive
    blob.save_npy(dir.join("b.npy"), Part::Data)?;
    assert_eq!(calls.load(Ordering::Relaxed), 0, "the dropped Context's callback is gone");
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}
