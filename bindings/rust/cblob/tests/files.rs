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
    std::fs::write(&prototxt, "name: \"LeNet\"\nlayer {\n  nme: \"data\"\n  type: \"Input\"\n}\n").expect("a prototxt");
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
