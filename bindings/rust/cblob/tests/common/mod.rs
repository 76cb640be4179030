// SPDX-License-Identifier: BSD-2-Clause
//! What the binding's tests share: where the Caffe files are, and the expected answers of a
//! model (`*.layers.txt`, an independent decoding of the file).
#![allow(dead_code)]
use std::path::PathBuf;

/// `../shared/data/caffe` beside the checkout (CTest names it in CBLOB_CAFFE_DATA_DIR).
pub fn caffe_data_dir() -> PathBuf {
    std::env::var_os("CBLOB_CAFFE_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| source_dir().join("../shared/data/caffe"))
}

/// The project's root.
pub fn source_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// One blob of a layer, as the expected answers give it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedBlob {
    pub shape: Vec<i64>,
    pub count: i64,
    pub first: f64,
    pub sum: f64,
}

/// One layer: its name, type and blobs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedLayer {
    pub name: String,
    pub kind: String,
    pub blobs: Vec<ExpectedBlob>,
}

/// The net's name and layers from a `*.layers.txt` file.
pub fn expected_layers(text: &str) -> (String, Vec<ExpectedLayer>) {
    let mut name = String::new();
    let mut layers = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("net name: ") {
            name = rest.trim_matches('\'').to_string();
        } else if line.starts_with(|c: char| c.is_ascii_digit()) && line.contains(" | ") {
            // idx | name | type | bottoms -> tops | shape=[a,b] (n data(float32)); ...
            let cells: Vec<&str> = line.split(" | ").collect();
            let blobs = cells[4]
                .split("; ")
                .filter(|b| b.starts_with("shape=["))
                .map(|b| {
                    let dims = &b["shape=[".len()..b.find(']').unwrap()];
                    let shape: Vec<i64> = dims.split(',').map(|d| d.parse().unwrap()).collect();
                    ExpectedBlob { count: shape.iter().product(), shape, first: f64::NAN, sum: f64::NAN }
                })
                .collect();
            layers.push(ExpectedLayer { name: cells[1].into(), kind: cells[2].into(), blobs });
        } else if let Some((blob, values)) = line.split_once(": n=") {
            // conv1.blobs[0]: n=500 first=0.0483 sum=1.53 min=... max=...
            let (layer, index) = blob.split_once(".blobs[").unwrap();
            let index: usize = index.trim_end_matches(']').parse().unwrap();
            let field = |key: &str| -> f64 {
                let start = values.find(key).unwrap() + key.len();
                values[start..].split(' ').next().unwrap().parse().unwrap()
            };
            let expected = layers.iter_mut().find(|l: &&mut ExpectedLayer| l.name == layer).unwrap();
            let b = &mut expected.blobs[index];
            assert_eq!(values.split(' ').next().unwrap().parse::<i64>().unwrap(), b.count);
            b.first = field("first=");
            b.sum = field("sum=");
        }
    }
    (name, layers)
}

/// Whether two sums of float32 values agree: the expected ones have 9 significant digits.
pub fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-6 * expected.abs().max(1.0)
}
