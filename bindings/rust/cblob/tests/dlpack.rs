// SPDX-License-Identifier: BSD-2-Clause
//! DLPack through the Rust layer: the mirror structs against the C header, round trips that
//! share memory, who runs the deleter (counted by putting a counting deleter in front of the
//! producer's), refused imports that leave the tensor with the caller, and the read-only flag.
//! Device exports are in gpu.rs, which runs against the test double of the driver too.
use std::collections::HashMap;
use std::ffi::c_void;
use std::io::Write;
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cblob::dlpack::{self, DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use cblob::{Blob, Context, DType, DlpackTensor, Error, Head, LegacyDlpackTensor, Memory, Part, Status};

// ---- counting deleters --------------------------------------------------------------------------

type VersionedDeleter = unsafe extern "C" fn(*mut DLManagedTensorVersioned);
type LegacyDeleter = unsafe extern "C" fn(*mut DLManagedTensor);

/// The producer's deleter and the count, by tensor address. An entry stays after the call, so
/// that a second call is counted (and does not reach the producer's deleter twice).
struct Interposed {
    versioned: Option<VersionedDeleter>,
    legacy: Option<LegacyDeleter>,
    count: Arc<AtomicUsize>,
}

static INTERPOSED: Mutex<Vec<(usize, Interposed)>> = Mutex::new(Vec::new());

fn interposed(address: usize) -> (Option<VersionedDeleter>, Option<LegacyDeleter>, usize) {
    let list = INTERPOSED.lock().unwrap();
    // The newest entry: an address freed by one test may be a later tensor's.
    let (_, entry) = list.iter().rev().find(|(a, _)| *a == address).expect("an interposed tensor");
    (entry.versioned, entry.legacy, entry.count.fetch_add(1, Ordering::SeqCst))
}

unsafe extern "C" fn counting_versioned(t: *mut DLManagedTensorVersioned) {
    let (deleter, _, before) = interposed(t as usize);
    if before == 0 {
        deleter.expect("the producer's deleter")(t);
    }
}

unsafe extern "C" fn counting_legacy(t: *mut DLManagedTensor) {
    let (_, deleter, before) = interposed(t as usize);
    if before == 0 {
        deleter.expect("the producer's deleter")(t);
    }
}

/// Puts a counting deleter in front of the tensor's; returns the count of its calls.
fn count_deletes(tensor: &mut DlpackTensor) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    // SAFETY: the new deleter calls the old one once.
    let raw = unsafe { tensor.raw_mut() };
    let entry = Interposed { versioned: raw.deleter, legacy: None, count: Arc::clone(&count) };
    INTERPOSED.lock().unwrap().push((raw as *mut _ as usize, entry));
    raw.deleter = Some(counting_versioned);
    count
}

fn count_legacy_deletes(tensor: &mut LegacyDlpackTensor) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    // SAFETY: as above.
    let raw = unsafe { tensor.raw_mut() };
    let entry = Interposed { versioned: None, legacy: raw.deleter, count: Arc::clone(&count) };
    INTERPOSED.lock().unwrap().push((raw as *mut _ as usize, entry));
    raw.deleter = Some(counting_legacy);
    count
}

fn deletes(count: &AtomicUsize) -> usize {
    count.load(Ordering::SeqCst)
}

// ---- a tensor made in Rust ----------------------------------------------------------------------

/// A versioned tensor over a Rust vector, freed (and counted) by its deleter.
#[repr(C)]
struct Owned {
    tensor: DLManagedTensorVersioned, // first: the tensor's address is the box's
    shape: Vec<i64>,
    values: Vec<f64>,
    deleted: Arc<AtomicUsize>,
}

unsafe extern "C" fn delete_owned(t: *mut DLManagedTensorVersioned) {
    let owned = Box::from_raw(t.cast::<Owned>());
    owned.deleted.fetch_add(1, Ordering::SeqCst);
}

/// A float64 tensor of the given shape holding 0, 1, 2, ..., and the count of its deletes.
fn rust_tensor(shape: &[i64]) -> (DlpackTensor, Arc<AtomicUsize>) {
    let deleted = Arc::new(AtomicUsize::new(0));
    let count = shape.iter().product::<i64>() as usize;
    let mut owned = Box::new(Owned {
        tensor: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_owned),
            flags: 0,
            dl_tensor: DLTensor {
                data: ptr::null_mut(),
                device: DLDevice { device_type: dlpack::DEVICE_CPU, device_id: 0 },
                ndim: shape.len() as i32,
                dtype: DLDataType::of(DType::Float64),
                shape: ptr::null_mut(),
                strides: ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape: shape.to_vec(),
        values: (0..count).map(|i| i as f64).collect(),
        deleted: Arc::clone(&deleted),
    });
    owned.tensor.dl_tensor.data = owned.values.as_mut_ptr().cast::<c_void>();
    owned.tensor.dl_tensor.shape = owned.shape.as_mut_ptr();
    let raw = Box::into_raw(owned);
    // SAFETY: a valid tensor whose deleter frees it; its vectors live in the box.
    let tensor = unsafe { DlpackTensor::from_raw(raw.cast()) }.unwrap();
    (tensor, deleted)
}

fn float_blob(ctx: &Context, values: &[f32], shape: &[i64]) -> Result<Blob, Error> {
    let mut blob = Blob::new(ctx, DType::Float32, shape)?;
    blob.copy_in(Part::Data, values)?;
    Ok(blob)
}

// ---- the mirror ---------------------------------------------------------------------------------

#[test]
fn mirror_matches_the_c_header() {
    let Some(path) = std::env::var_os("CBLOB_DLPACK_LAYOUT") else {
        // Printed past the test harness's capture, so that the skip is seen.
        let _ = writeln!(std::io::stderr(), "SKIPPED mirror_matches_the_c_header: CBLOB_DLPACK_LAYOUT is not set (test.sh compiles bindings/dlpack_layout.c and sets it)");
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let c: HashMap<&str, u64> = text.lines().map(|l| l.split_once(' ').map(|(k, v)| (k, v.parse().unwrap())).unwrap()).collect();
    // The offset and the size of each field.
    macro_rules! field {
        ($t:ident, $f:ident) => {
            [
                (concat!(stringify!($t), ".", stringify!($f)), offset_of!($t, $f)),
                (concat!(stringify!($t), ".", stringify!($f), ".size"), size_of_field(|x: &$t| &x.$f)),
            ]
        };
    }
    let fields = [
        field!(DLPackVersion, major),
        field!(DLPackVersion, minor),
        field!(DLDevice, device_type),
        field!(DLDevice, device_id),
        field!(DLDataType, code),
        field!(DLDataType, bits),
        field!(DLDataType, lanes),
        field!(DLTensor, data),
        field!(DLTensor, device),
        field!(DLTensor, ndim),
        field!(DLTensor, dtype),
        field!(DLTensor, shape),
        field!(DLTensor, strides),
        field!(DLTensor, byte_offset),
        field!(DLManagedTensor, dl_tensor),
        field!(DLManagedTensor, manager_ctx),
        field!(DLManagedTensor, deleter),
        field!(DLManagedTensorVersioned, version),
        field!(DLManagedTensorVersioned, manager_ctx),
        field!(DLManagedTensorVersioned, deleter),
        field!(DLManagedTensorVersioned, flags),
        field!(DLManagedTensorVersioned, dl_tensor),
    ];
    let mut rust: Vec<(&str, usize)> = fields.iter().flatten().copied().collect();
    rust.extend_from_slice(&[
        ("DLPackVersion.size", size_of::<DLPackVersion>()),
        ("DLDevice.size", size_of::<DLDevice>()),
        ("DLDataType.size", size_of::<DLDataType>()),
        ("DLTensor.size", size_of::<DLTensor>()),
        ("DLManagedTensor.size", size_of::<DLManagedTensor>()),
        ("DLManagedTensorVersioned.size", size_of::<DLManagedTensorVersioned>()),
        ("kDLCPU", dlpack::DEVICE_CPU as usize),
        ("kDLCUDA", dlpack::DEVICE_CUDA as usize),
        ("kDLCUDAHost", dlpack::DEVICE_CUDA_HOST as usize),
        ("kDLCUDAManaged", dlpack::DEVICE_CUDA_MANAGED as usize),
        ("kDLInt", dlpack::CODE_INT as usize),
        ("kDLUInt", dlpack::CODE_UINT as usize),
        ("kDLFloat", dlpack::CODE_FLOAT as usize),
        ("kDLBfloat", dlpack::CODE_BFLOAT as usize),
        ("kDLBool", dlpack::CODE_BOOL as usize),
        ("DLPACK_FLAG_BITMASK_READ_ONLY", dlpack::FLAG_READ_ONLY as usize),
        ("DLPACK_FLAG_BITMASK_IS_COPIED", dlpack::FLAG_IS_COPIED as usize),
        ("DLPACK_MAJOR_VERSION", dlpack::MAJOR_VERSION as usize),
    ]);
    for &(name, value) in &rust {
        assert_eq!(c.get(name).copied(), Some(value as u64), "{name}: C says {:?}, the mirror {value}", c.get(name));
    }
    assert_eq!(rust.len(), c.len(), "every line of the C layout is checked");
}

/// The size of the field `field` selects.
fn size_of_field<T, F>(_field: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

// ---- export and import --------------------------------------------------------------------------

#[test]
fn round_trip_shares_memory() -> Result<(), Error> {
    let ctx = Context::new()?;
    let blob = float_blob(&ctx, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let tensor = blob.to_dlpack(Part::Data, Memory::Host, false)?;
    assert_eq!(tensor.shape(), [2, 3]);
    assert_eq!((tensor.ndim(), tensor.strides(), tensor.byte_offset(), tensor.count()), (2, None, 0, 6));
    assert_eq!(tensor.device(), DLDevice { device_type: dlpack::DEVICE_CPU, device_id: 0 });
    assert_eq!(tensor.dtype(), DLDataType { code: dlpack::CODE_FLOAT, bits: 32, lanes: 1 });
    assert_eq!(tensor.element_type(), Some(DType::Float32));
    assert_eq!((tensor.version().major, tensor.is_read_only(), tensor.flags()), (1, false, 0));
    assert_eq!(tensor.data().cast_const(), blob.data::<f32>()?.as_ptr().cast::<c_void>(), "the blob's own memory");
    assert_eq!(blob.head(Part::Data)?, Head::AtCpu);

    let mut back = Blob::from_dlpack(&ctx, tensor)?;
    assert_eq!((back.shape(), back.dtype()?), (vec![2, 3], DType::Float32));
    back.data_mut::<f32>()?[4] = 50.0;
    assert_eq!(blob.to_vec::<f32>(Part::Data)?, [1.0, 2.0, 3.0, 4.0, 50.0, 6.0], "written through the import");
    let mut blob = blob;
    blob.data_mut::<f32>()?[0] = -1.0;
    assert_eq!(back.read_element(Part::Data, &[0, 0])?, -1.0, "written through the original");
    assert_eq!(back.to_vec::<f32>(Part::Diff)?, [0.0; 6], "the diff is the import's own");

    // The import shares the original's view tracking, as blobs sharing memory do.
    {
        let view = blob.data::<f32>()?;
        assert_eq!(back.data_mut::<f32>().unwrap_err().status(), Status::State);
        assert_eq!(view[4], 50.0);
    }
    drop(blob);
    assert_eq!(back.to_vec::<f32>(Part::Data)?[4], 50.0, "the memory outlives the original blob");
    Ok(())
}

#[test]
fn deleter_runs_once_when_the_wrapper_is_dropped() -> Result<(), Error> {
    let ctx = Context::new()?;
    let mut blob = float_blob(&ctx, &[1.0, 2.0], &[2])?;
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, true)?;
    let count = count_deletes(&mut tensor);
    // The tensor holds the buffer: replacing it in place is refused until the deleter runs.
    assert_eq!(blob.set_cpu_data(vec![5.0f32, 6.0]).unwrap_err().status(), Status::State);
    assert_eq!(deletes(&count), 0);
    drop(tensor);
    assert_eq!(deletes(&count), 1);
    blob.set_cpu_data(vec![5.0f32, 6.0])?;

    // The tensor outlives its blob and keeps the values it viewed.
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, true)?;
    let count = count_deletes(&mut tensor);
    drop(blob);
    // SAFETY: nothing else uses the memory now.
    assert_eq!(unsafe { tensor.host_slice::<f32>()? }, [5.0, 6.0]);
    drop(tensor);
    assert_eq!(deletes(&count), 1);
    Ok(())
}

#[test]
fn deleter_runs_once_when_the_tensor_is_handed_over() -> Result<(), Error> {
    let ctx = Context::new()?;
    let blob = float_blob(&ctx, &[1.0, 2.0, 3.0], &[3])?;

    // To a consumer, which calls the deleter itself.
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, false)?;
    let count = count_deletes(&mut tensor);
    let raw = tensor.into_raw().cast::<DLManagedTensorVersioned>();
    assert_eq!(deletes(&count), 0, "into_raw does not delete");
    // SAFETY: the consumer's side: a valid tensor, deleted once.
    unsafe { ((*raw).deleter.unwrap())(raw) };
    assert_eq!(deletes(&count), 1);

    // To cblob, which deletes it when the imported blob lets go.
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, false)?;
    let count = count_deletes(&mut tensor);
    let back = Blob::from_dlpack(&ctx, tensor)?;
    assert_eq!(deletes(&count), 0);
    let mut sharer = Blob::new(&ctx, DType::Float32, &[3])?;
    sharer.share_data(&back)?;
    drop(back);
    assert_eq!(deletes(&count), 0, "a blob sharing the memory still holds it");
    assert_eq!(sharer.to_vec::<f32>(Part::Data)?, [1.0, 2.0, 3.0]);
    drop(sharer);
    assert_eq!(deletes(&count), 1);

    // A tensor without elements is deleted before the import returns.
    let empty = Blob::new(&ctx, DType::Int32, &[0, 4])?;
    let mut tensor = empty.to_dlpack(Part::Data, Memory::Host, false)?;
    assert!(tensor.data().is_null());
    assert_eq!(tensor.shape(), [0, 4]);
    let count = count_deletes(&mut tensor);
    let back = Blob::from_dlpack(&ctx, tensor)?;
    assert_eq!((deletes(&count), back.shape(), back.dtype()?), (1, vec![0, 4], DType::Int32));
    Ok(())
}

#[test]
fn legacy_tensors() -> Result<(), Error> {
    let ctx = Context::new()?;
    let blob = float_blob(&ctx, &[1.0, 2.0, 3.0, 4.0], &[2, 1, 2])?;
    let mut tensor = blob.to_dlpack_legacy(Part::Data, Memory::Host)?;
    assert_eq!((tensor.shape(), tensor.element_type(), tensor.device().device_type), (&[2i64, 1, 2][..], Some(DType::Float32), dlpack::DEVICE_CPU));
    // SAFETY: nothing else uses the memory while the slice lives.
    unsafe { tensor.host_slice_mut::<f32>()?[3] = 40.0 };
    assert_eq!(blob.to_vec::<f32>(Part::Data)?, [1.0, 2.0, 3.0, 40.0]);

    let count = count_legacy_deletes(&mut tensor);
    let back = Blob::from_dlpack_legacy(&ctx, tensor)?;
    assert_eq!(back.to_vec::<f32>(Part::Data)?, [1.0, 2.0, 3.0, 40.0]);
    assert_eq!(deletes(&count), 0);
    drop(back);
    assert_eq!(deletes(&count), 1);

    let mut tensor = blob.to_dlpack_legacy(Part::Diff, Memory::Host)?;
    let count = count_legacy_deletes(&mut tensor);
    drop(tensor);
    assert_eq!(deletes(&count), 1);
    Ok(())
}

#[test]
fn a_refused_import_leaves_the_tensor_with_the_caller() -> Result<(), Error> {
    let ctx = Context::new()?;
    let blob = float_blob(&ctx, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?;
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, false)?;
    let count = count_deletes(&mut tensor);
    // SAFETY: only the dtype changes; the deleter does not read it.
    unsafe { tensor.raw_mut().dl_tensor.dtype = DLDataType { code: dlpack::CODE_BFLOAT, bits: 16, lanes: 1 } };
    let refused = Blob::from_dlpack(&ctx, tensor).unwrap_err();
    assert_eq!(refused.error().status(), Status::DType, "{refused}");
    assert!(refused.error().message().starts_with("cblob_blob_from_dlpack: "), "{refused}");
    assert_eq!(deletes(&count), 0, "the deleter is not run");
    let mut tensor = refused.into_tensor();
    assert_eq!(tensor.element_type(), None);

    // Two lanes are refused too; `?` turns the refusal into an Error and drops the tensor.
    // SAFETY: as above.
    unsafe { tensor.raw_mut().dl_tensor.dtype = DLDataType { code: dlpack::CODE_FLOAT, bits: 32, lanes: 2 } };
    let imported = || -> Result<Blob, Error> { Ok(Blob::from_dlpack(&ctx, tensor)?) };
    assert_eq!(imported().unwrap_err().status(), Status::DType);
    assert_eq!(deletes(&count), 1, "deleted once, by the dropped wrapper");

    // Strides that are not row-major, through the legacy call.
    let mut legacy = blob.to_dlpack_legacy(Part::Data, Memory::Host)?;
    let count = count_legacy_deletes(&mut legacy);
    let mut strides = [1i64, 2]; // column-major
    // SAFETY: strides outlives the tensor's use here (the wrapper is dropped below).
    unsafe { legacy.raw_mut().dl_tensor.strides = strides.as_mut_ptr() };
    let (error, mut legacy) = Blob::from_dlpack_legacy(&ctx, legacy).unwrap_err().into_parts();
    assert_eq!(error.status(), Status::Shape, "{error}");
    assert_eq!(legacy.strides(), Some(&[1i64, 2][..]));
    // SAFETY: back to C-contiguous: the import now works.
    unsafe { legacy.raw_mut().dl_tensor.strides = ptr::null_mut() };
    let back = Blob::from_dlpack_legacy(&ctx, legacy)?;
    assert_eq!(back.to_vec::<f32>(Part::Data)?, [1.0, 2.0, 3.0, 4.0]);
    drop(back);
    assert_eq!(deletes(&count), 1);
    Ok(())
}

#[test]
fn the_read_only_flag() -> Result<(), Error> {
    let ctx = Context::new()?;
    let mut blob = float_blob(&ctx, &[7.0, 8.0], &[2])?;
    {
        let view = blob.data::<f32>()?;
        // A read-only export is a read: allowed beside a view; a writable one is not.
        let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, true)?;
        assert!(tensor.is_read_only());
        assert_eq!(tensor.flags() & dlpack::FLAG_READ_ONLY, dlpack::FLAG_READ_ONLY);
        // SAFETY: nothing writes the memory while the slices live.
        assert_eq!(unsafe { tensor.host_slice::<f32>()? }, &view[..]);
        assert_eq!(unsafe { tensor.host_slice_mut::<f32>() }.unwrap_err().status(), Status::State);
        assert_eq!(unsafe { tensor.host_slice::<i32>() }.unwrap_err().status(), Status::DType);
        assert_eq!(blob.to_dlpack(Part::Data, Memory::Host, false).unwrap_err().status(), Status::State);
        assert_eq!(blob.to_dlpack_legacy(Part::Data, Memory::Host).unwrap_err().status(), Status::State);

        // cblob refuses to import a read-only tensor: every blob can be written.
        let count = count_deletes(&mut tensor);
        let refused = Blob::from_dlpack(&ctx, tensor).unwrap_err();
        assert_eq!(refused.error().status(), Status::InvalidArgument);
        assert!(refused.error().message().contains("read-only"), "{refused}");
        drop(refused);
        assert_eq!(deletes(&count), 1);
    }
    // Once the view is gone, a writable export works and says so.
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, false)?;
    assert_eq!((tensor.is_read_only(), tensor.flags()), (false, 0));
    // SAFETY: nothing else uses the memory while the slice lives.
    unsafe { tensor.host_slice_mut::<f32>()?[1] = 80.0 };
    assert_eq!(blob.to_vec::<f32>(Part::Data)?, [7.0, 80.0]);
    blob.fill(Part::Data, 1.0)?;
    Ok(())
}

#[test]
fn a_tensor_made_in_rust() -> Result<(), Error> {
    let ctx = Context::new()?;
    let (tensor, deleted) = rust_tensor(&[2, 3]);
    let mut blob = Blob::from_dlpack(&ctx, tensor)?;
    assert_eq!((blob.dtype()?, blob.shape()), (DType::Float64, vec![2, 3]));
    assert_eq!(blob.to_vec::<f64>(Part::Data)?, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    blob.scale(Part::Data, 2.0)?;
    assert_eq!(blob.asum(Part::Data)?, 30.0);
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    drop(blob);
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "cblob ran the producer's deleter once");

    // A major version cblob does not read: refused, and only the deleter is touched, by the drop.
    let (mut tensor, deleted) = rust_tensor(&[4]);
    // SAFETY: only the version changes.
    unsafe { tensor.raw_mut().version.major = 2 };
    let refused = Blob::from_dlpack(&ctx, tensor).unwrap_err();
    assert_eq!(refused.error().status(), Status::InvalidArgument);
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    drop(refused);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);

    // SAFETY: NULL is refused before anything is read.
    assert_eq!(unsafe { DlpackTensor::from_raw(ptr::null_mut()) }.unwrap_err().status(), Status::InvalidArgument);
    Ok(())
}

#[test]
fn tensors_move_between_threads() -> Result<(), Error> {
    let ctx = Context::new()?;
    let blob = float_blob(&ctx, &[1.0, 2.0], &[2])?;
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, true)?;
    let count = count_deletes(&mut tensor);
    drop(blob);
    // The deleter runs on another thread, after the blob is gone.
    std::thread::spawn(move || drop(tensor)).join().unwrap();
    assert_eq!(deletes(&count), 1);
    Ok(())
}

#[test]
fn import_on_a_stream() -> Result<(), Error> {
    let ctx = Context::new()?;
    let blob = float_blob(&ctx, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?;
    // A host tensor must be ready when handed over: the stream is not used, null or not.
    for stream in [ptr::null_mut(), 2usize as *mut c_void] {
        let tensor = blob.to_dlpack(Part::Data, Memory::Host, false)?;
        // SAFETY: a host tensor's stream is never handed to a driver.
        let mut back = unsafe { Blob::from_dlpack_on_stream(&ctx, tensor, stream)? };
        back.data_mut::<f32>()?[1] = 20.0;
        assert_eq!(blob.to_vec::<f32>(Part::Data)?, [1.0, 20.0, 3.0, 4.0], "the import shares the memory");
        let legacy = blob.to_dlpack_legacy(Part::Data, Memory::Host)?;
        // SAFETY: as above.
        let back = unsafe { Blob::from_dlpack_legacy_on_stream(&ctx, legacy, stream)? };
        assert_eq!(back.to_vec::<f32>(Part::Data)?, [1.0, 20.0, 3.0, 4.0]);
    }
    // The import's rules hold on a stream too: a refused tensor comes back, its deleter not run.
    let mut tensor = blob.to_dlpack(Part::Data, Memory::Host, false)?;
    let count = count_deletes(&mut tensor);
    // SAFETY: only the dtype changes; the deleter does not read it.
    unsafe { tensor.raw_mut().dl_tensor.dtype = DLDataType { code: dlpack::CODE_BFLOAT, bits: 16, lanes: 1 } };
    // SAFETY: as above.
    let refused = unsafe { Blob::from_dlpack_on_stream(&ctx, tensor, ptr::null_mut()) }.unwrap_err();
    assert_eq!(refused.error().status(), Status::DType, "{refused}");
    assert!(refused.error().message().starts_with("cblob_blob_from_dlpack_on_stream: "), "{refused}");
    assert_eq!(deletes(&count), 0);
    drop(refused);
    assert_eq!(deletes(&count), 1);
    Ok(())
}
