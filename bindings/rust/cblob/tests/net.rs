// SPDX-License-Identifier: BSD-2-Clause
//! Net structure, lossless saving, exports read back and net surgery through the Rust layer.
use cblob::{Context, ExportFlags, Net, Part, Phase, RuleKind, Status};

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

fn field(number: u64, payload: &[u8]) -> Vec<u8> {
    [varint(number << 3 | 2), varint(payload.len() as u64), payload.to_vec()].concat()
}

fn int_field(number: u64, v: u64) -> Vec<u8> {
    [varint(number << 3), varint(v)].concat()
}

/// A V2 net: conv1 with a bottom, a top, phase TEST, a param spec, an include rule, convolution
/// parameters, a fork's field and a 2-value blob.
fn structured_net() -> Vec<u8> {
    let spec = [field(1, b"w"), vec![0x1d, 0, 0, 0, 0x40]].concat();
    let rule = [int_field(1, 0), field(4, b"s")].concat();
    let values = [1.5f32.to_le_bytes(), (-2f32).to_le_bytes()].concat();
    let blob = [field(7, &field(1, &varint(2))), field(5, &values)].concat();
    let layer = [field(1, b"conv1"), field(2, b"Convolution"), field(3, b"data"), field(4, b"conv1"), int_field(10, 1),
                 field(6, &spec), field(8, &rule), field(106, &int_field(1, 8)), field(5000, b"fork"), field(7, &blob)]
        .concat();
    [field(1, b"net"), field(100, &layer)].concat()
}

#[test]
fn structure_and_lossless_save() -> cblob::Result<()> {
    let ctx = Context::new()?;
    let bytes = structured_net();
    let net = Net::open(&ctx, &bytes)?;
    assert_eq!(net.bottoms(0)?, vec!["data"]);
    assert_eq!(net.tops(0)?, vec!["conv1"]);
    assert_eq!(net.phase(0)?, Phase::Test);
    let rules = net.rules(0, RuleKind::Include)?;
    assert_eq!((rules.len(), rules[0].phase, rules[0].min_level), (1, Phase::Train, i32::MIN));
    assert_eq!(rules[0].stages, vec!["s"]);
    let specs = net.param_specs(0)?;
    assert_eq!((specs[0].name.as_deref(), specs[0].lr_mult, specs[0].decay_mult), (Some("w"), 2.0, 1.0));
    assert_eq!(net.params_json(0, &[])?,
               r#"{"convolution_param":{"num_output":8},"unknown_fields":[{"field":5000,"wire_type":2,"count":1,"bytes":4,"first_bytes":"666f726b"}]}"#);
    assert!(net.layer_json(0, &[])?.contains(r#""bottoms":["data"]"#));
    assert_eq!(net.blob_shape(0, 0)?, vec![2]);
    assert_eq!(net.read_blob::<f32>(0, 0, Part::Data)?, vec![1.5, -2.0]);
    assert_eq!(net.read_blob::<f64>(0, 0, Part::Data).unwrap_err().status(), Status::DType);
    assert_eq!(net.to_bytes(true)?, bytes);
    Ok(())
}

#[test]
fn exports_read_back_and_surgery() -> cblob::Result<()> {
    let ctx = Context::new()?;
    let mut net = Net::open(&ctx, &structured_net())?;
    for read in [Net::open_safetensors(&ctx, &net.to_safetensors(&[])?)?, Net::open_npz(&ctx, &net.to_npz(&[ExportFlags::Diff])?)?] {
        assert_eq!(read.read_blob::<f32>(0, 0, Part::Data)?, vec![1.5, -2.0]);
        net.replace_blobs(&read)?;
    }
    let torch = net.to_safetensors(&[ExportFlags::TorchNames])?;
    assert!(String::from_utf8_lossy(&torch).contains("\"conv1.weight\""));
    assert!(net.torch_unmapped()?.is_empty());
    // A weights net of the wrong shape: one error naming it, nothing changed.
    let wrong = [field(1, b"w"), field(100, &[field(1, b"conv1"), field(7, &[field(7, &field(1, &varint(3))),
                 field(5, &[0u8; 12])].concat())].concat())].concat();
    let error = net.replace_blobs(&Net::open(&ctx, &wrong)?).unwrap_err();
    assert_eq!(error.status(), Status::Shape);
    assert!(error.message().contains("conv1 blob 0"), "{}", error.message());
    Ok(())
}
