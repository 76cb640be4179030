// SPDX-License-Identifier: BSD-2-Clause
//! NeoML's blob operations through the Rust layer: the named layout, typed copies, conversions,
//! transposes, merges and splits, fills, windows (and how they join their parent's view
//! tracking) and mapped ranges.
use cblob::{Blob, Context, DType, Dim, Error, Head, Part, Status};

fn ctx() -> Context {
    Context::new().expect("a context")
}

fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

#[test]
fn layout_creators_and_getters() -> Result<(), Error> {
    let ctx = ctx();
    let t = Blob::new_tensor(&ctx, DType::Float32, &[2, 3])?;
    assert_eq!(t.shape(), [2, 3, 1, 1, 1, 1, 1]);
    assert_eq!(Blob::new_vector(&ctx, DType::Int32, 5)?.shape(), [5, 1, 1, 1, 1, 1, 1]);
    assert_eq!(Blob::new_matrix(&ctx, DType::Float64, 2, 4)?.shape(), [2, 4, 1, 1, 1, 1, 1]);
    assert_eq!(Blob::new_data(&ctx, DType::Float32, 2, 3, 4)?.shape(), [2, 3, 1, 1, 1, 1, 4]);
    assert_eq!(Blob::new_list(&ctx, DType::Float32, 2, 3, 5, 4)?.shape(), [2, 3, 5, 1, 1, 1, 4]);
    let image = Blob::new_image2d(&ctx, DType::Uint32, 1, 2, 3, 4, 5)?;
    assert_eq!(image.shape(), [1, 2, 1, 3, 4, 1, 5]);
    let volume = Blob::new_image3d(&ctx, DType::Float32, 1, 2, 3, 4, 5, 6)?;
    assert_eq!((volume.dim(Dim::Depth)?, volume.dim(Dim::Channels)?, volume.dim(Dim::BatchWidth)?), (5, 6, 2));
    assert_eq!((volume.object_count()?, volume.object_size()?, volume.geometrical_size()?), (2, 360, 60));

    let like = image.new_like(DType::Float64)?;
    assert_eq!((like.dtype()?, like.shape()), (DType::Float64, image.shape()));
    assert!(like.equal_shape(&image));
    assert!(like.equal_dims(&volume, &[0, 1, 3])?);
    assert!(!like.equal_dims(&volume, &[5])?);
    assert_eq!(like.equal_dims(&volume, &[9]).unwrap_err().status(), Status::OutOfRange);

    // Named getters need exactly 7 axes.
    let plain = Blob::new(&ctx, DType::Float32, &[2, 3])?;
    let err = plain.dim(Dim::Height).unwrap_err();
    assert_eq!(err.status(), Status::Shape);
    assert!(err.message().starts_with("cblob_blob_dim: "), "{err}");
    assert_eq!(Blob::new_tensor(&ctx, DType::Float32, &[1; 8]).unwrap_err().status(), Status::Shape);
    assert_eq!(Blob::new_matrix(&ctx, DType::Float32, -1, 2).unwrap_err().status(), Status::Shape);

    let mut r = Blob::new(&ctx, DType::Float32, &[2, 6])?;
    r.copy_in(Part::Data, &iota(12))?;
    r.reinterpret(&[3, 4])?;
    assert_eq!((r.shape(), r.read_element(Part::Data, &[2, 3])?), (vec![3, 4], 11.0));
    assert_eq!(r.reinterpret(&[5]).unwrap_err().status(), Status::Shape);
    Ok(())
}

#[test]
fn typed_copies_conversions_and_transposes() -> Result<(), Error> {
    let ctx = ctx();
    let mut a = Blob::new(&ctx, DType::Float32, &[2, 3])?;
    a.copy_in(Part::Data, &[0.5f32, 1.5, -2.5, 1e10, -1e10, f32::NAN])?;
    assert_eq!(a.copy_in(Part::Data, &[1.0f64; 6]).unwrap_err().status(), Status::DType);
    assert_eq!(a.copy_in(Part::Data, &[1.0f32; 5]).unwrap_err().status(), Status::Shape);
    let mut out = [0.0f32; 6];
    a.copy_out(Part::Data, &mut out)?;
    assert_eq!(out[..5], [0.5, 1.5, -2.5, 1e10, -1e10]);

    // Floats to int32: nearest, ties to even, saturated; NaN gives 0.
    let ints = a.clone_as(DType::Int32)?;
    assert_eq!(ints.to_vec::<i32>(Part::Data)?, [0, 2, -2, i32::MAX, i32::MIN, 0]);
    let mut back = Blob::new(&ctx, DType::Float64, &[2, 3])?;
    back.convert_from(&ints, Part::Data)?;
    assert_eq!(back.read_element(Part::Data, &[0, 1])?, 2.0);
    assert_eq!(back.convert_from(&Blob::new(&ctx, DType::Int32, &[6])?, Part::Data).unwrap_err().status(), Status::Shape);
    // NeoML's rule: toward zero, saturated; NaN gives 0.
    let mut truncated = Blob::new(&ctx, DType::Int32, &[2, 3])?;
    truncated.convert_from_truncating(&a, Part::Data)?;
    assert_eq!(truncated.to_vec::<i32>(Part::Data)?, [0, 1, -2, i32::MAX, i32::MIN, 0]);

    let mut copy = a.deep_copy()?;
    copy.fill(Part::Data, 1.0)?;
    assert_eq!(a.read_element(Part::Data, &[0, 0])?, 0.5, "a deep copy is independent");

    let mut m = Blob::new(&ctx, DType::Float32, &[2, 3])?;
    m.copy_in(Part::Data, &iota(6))?;
    let t = m.transposed(0, -1)?;
    assert_eq!((t.shape(), t.to_vec::<f32>(Part::Data)?), (vec![3, 2], vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]));
    let mut u = Blob::new(&ctx, DType::Float32, &[3, 2])?;
    u.transpose_from(&m, Part::Data, 1, 0)?;
    assert_eq!(u.to_vec::<f32>(Part::Data)?, t.to_vec::<f32>(Part::Data)?);
    let err = u.transpose_from(&m, Part::Data, 0, 0).unwrap_err();
    assert_eq!(err.status(), Status::Shape, "{err}");
    Ok(())
}

#[test]
fn merge_split_fill_and_add() -> Result<(), Error> {
    let ctx = ctx();
    let mut top = Blob::new(&ctx, DType::Float32, &[1, 3])?;
    top.copy_in(Part::Data, &[1.0f32, 2.0, 3.0])?;
    let mut bottom = Blob::new(&ctx, DType::Float32, &[2, 3])?;
    bottom.copy_in(Part::Data, &[4.0f32, 5.0, 6.0, 7.0, 8.0, 9.0])?;
    let mut whole = Blob::new(&ctx, DType::Float32, &[3, 3])?;
    whole.merge(Part::Data, 0, &[&top, &bottom])?;
    assert_eq!(whole.to_vec::<f32>(Part::Data)?, (1..10).map(|i| i as f32).collect::<Vec<_>>());
    let err = whole.merge(Part::Data, 0, &[&top, &top]).unwrap_err();
    assert_eq!(err.status(), Status::Shape, "{err}");

    let mut left = Blob::new(&ctx, DType::Float32, &[3, 1])?;
    let mut right = Blob::new(&ctx, DType::Float32, &[3, 2])?;
    whole.split(Part::Data, 1, &mut [&mut left, &mut right])?;
    assert_eq!(left.to_vec::<f32>(Part::Data)?, [1.0, 4.0, 7.0]);
    assert_eq!(right.to_vec::<f32>(Part::Data)?, [2.0, 3.0, 5.0, 6.0, 8.0, 9.0]);

    let mut objects = Blob::new_data(&ctx, DType::Float32, 1, 2, 3)?;
    let mut first = Blob::new_data(&ctx, DType::Float32, 1, 2, 1)?;
    let mut second = Blob::new_data(&ctx, DType::Float32, 1, 2, 2)?;
    objects.copy_in(Part::Data, &iota(6))?;
    objects.split_objects(Part::Data, &mut [&mut first, &mut second])?;
    assert_eq!((first.to_vec::<f32>(Part::Data)?, second.to_vec::<f32>(Part::Data)?), (vec![0.0, 3.0], vec![1.0, 2.0, 4.0, 5.0]));
    let mut joined = objects.new_like(DType::Float32)?;
    joined.merge_objects(Part::Data, &[&first, &second])?;
    assert_eq!(joined.to_vec::<f32>(Part::Data)?, iota(6));

    joined.fill_object(Part::Diff, 1, 2.0)?;
    assert_eq!(joined.to_vec::<f32>(Part::Diff)?, [0.0, 0.0, 0.0, 2.0, 2.0, 2.0]);
    joined.clear_object(Part::Diff, 1)?;
    assert_eq!(joined.asum(Part::Diff)?, 0.0);
    assert_eq!(joined.fill_object(Part::Diff, 2, 1.0).unwrap_err().status(), Status::OutOfRange);
    joined.add(&objects, Part::Data)?;
    assert_eq!(joined.to_vec::<f32>(Part::Data)?, iota(6).iter().map(|x| 2.0 * x).collect::<Vec<_>>());
    joined.clear(Part::Data)?;
    assert_eq!(joined.asum(Part::Data)?, 0.0);

    let mut ints = Blob::new(&ctx, DType::Int32, &[2])?;
    ints.fill(Part::Data, -3.0)?;
    assert_eq!(ints.to_vec::<i32>(Part::Data)?, [-3, -3]);
    assert_eq!(ints.fill(Part::Data, 0.5).unwrap_err().status(), Status::InvalidArgument);
    let err = ints.fill(Part::Data, 1e10).unwrap_err();
    assert_eq!(err.status(), Status::Overflow);
    assert!(err.message().starts_with("cblob_blob_fill: "), "{err}");
    Ok(())
}

#[test]
fn windows_view_their_parent_and_join_its_view_tracking() -> Result<(), Error> {
    let ctx = ctx();
    let mut parent = Blob::new(&ctx, DType::Float32, &[4, 2])?;
    parent.copy_in(Part::Data, &iota(8))?;
    {
        let mut w = parent.window(2)?;
        assert!(w.is_window() && !w.parent().is_window());
        assert_eq!((w.shape(), w.position(), w.size(), w.capacity()), (vec![2, 2], 0, 2, 4));
        w.shift(1)?;
        assert_eq!(w.to_vec::<f32>(Part::Data)?, [2.0, 3.0, 4.0, 5.0]);
        let err = w.set_position(3).unwrap_err();
        assert_eq!(err.status(), Status::OutOfRange);
        assert!(err.message().contains("outside [0, 2]"), "{err}");
        assert_eq!(w.position(), 1, "a failed move changes nothing");
        w.set_size(3)?;
        assert_eq!(w.shape(), [3, 2]);
        assert_eq!(w.reshape(&[10, 2]).unwrap_err().status(), Status::State, "a window cannot grow");

        // The window and its parent count as one memory for views.
        let parent_view = w.parent().data::<f32>()?;
        let err = w.data_mut::<f32>().unwrap_err();
        assert_eq!(err.status(), Status::State);
        assert_eq!(w.fill(Part::Data, 0.0).unwrap_err().status(), Status::State);
        assert_eq!(parent_view[2], 2.0);
        drop(parent_view);
        w.data_mut::<f32>()?.fill(-1.0);

        // Windows nest, and several windows of one parent may live at once.
        let inner = w.window(1)?;
        assert_eq!(inner.to_vec::<f32>(Part::Data)?, [-1.0, -1.0]);
        let other = w.parent().window(1)?;
        assert_eq!(other.to_vec::<f32>(Part::Data)?, [0.0, 1.0]);
    }
    assert_eq!(parent.to_vec::<f32>(Part::Data)?, [0.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]);
    // With the windows gone the parent may change again.
    parent.reshape(&[100, 2])?;
    assert_eq!(parent.window(0)?.count(), 0);
    let scalar = Blob::new(&ctx, DType::Float32, &[])?;
    assert_eq!(scalar.window(1).unwrap_err().status(), Status::Shape);
    Ok(())
}

#[test]
fn mapped_ranges_are_scoped_guards() -> Result<(), Error> {
    let ctx = ctx();
    let mut blob = Blob::new(&ctx, DType::Float32, &[6])?;
    {
        let mut range = blob.map_mut::<f32>(Part::Data, 1..4)?;
        assert_eq!(&*range, &[0.0, 0.0, 0.0]);
        range.copy_from_slice(&[1.0, 2.0, 3.0]);
    }
    assert_eq!(blob.head(Part::Data)?, Head::AtCpu);
    assert_eq!(&*blob.map::<f32>(Part::Data, 0..6)?, &[0.0, 1.0, 2.0, 3.0, 0.0, 0.0]);
    blob.map_write::<f32>(Part::Diff, 4..6)?.fill(5.0);
    assert_eq!(blob.asum(Part::Diff)?, 10.0);
    assert!(blob.map::<f32>(Part::Data, 3..3)?.is_empty());
    blob.map::<f32>(Part::Data, 0..1)?.unmap()?;

    let err = blob.map::<f32>(Part::Data, 4..7).unwrap_err();
    assert_eq!(err.status(), Status::OutOfRange);
    assert!(err.message().starts_with("cblob_blob_map: "), "{err}");
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = blob.map::<f32>(Part::Data, 3..2).unwrap_err();
    assert_eq!(reversed.status(), Status::OutOfRange);
    assert_eq!(blob.map::<i32>(Part::Data, 0..1).unwrap_err().status(), Status::DType);

    // A mapping claims its memory like a view: a blob sharing it cannot write meanwhile.
    let mut sharer = Blob::new(&ctx, DType::Float32, &[6])?;
    sharer.share_data(&blob)?;
    let range = blob.map_mut::<f32>(Part::Data, 0..2)?;
    assert_eq!(sharer.data::<f32>().unwrap_err().status(), Status::State);
    drop(range);
    assert_eq!(sharer.data::<f32>()?[3], 3.0);
    Ok(())
}
