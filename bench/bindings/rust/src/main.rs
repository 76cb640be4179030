// SPDX-License-Identifier: BSD-2-Clause
//! Times one cheap cblob call (Blob::count through the safe crate) against an empty C call, both
//! from Rust, and the raw call (cblob_sys) for the breakdown; prints
//! `RESULT rust <empty ns> <raw ns> <count ns>`.
use std::hint::black_box;
use std::time::Instant;

extern "C" {
    fn bench_ffi_empty();
}

/// Best nanoseconds per call over `batches` batches of `calls` calls.
fn best_ns(batches: u32, calls: u64, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..batches {
        let start = Instant::now();
        for _ in 0..calls {
            f();
        }
        best = best.min(start.elapsed().as_nanos() as f64 / calls as f64);
    }
    best
}

fn main() -> Result<(), cblob::Error> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, batches, calls) = if quick { (2, 3, 200_000) } else { (5, 10, 2_000_000) };
    let ctx = cblob::Context::new()?;
    let blob = cblob::Blob::new(&ctx, cblob::DType::Float32, &[2, 3, 4])?;
    assert_eq!(blob.count(), 24);
    let (mut empty, mut raw, mut count) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    // Alternating rounds, so that a noisy neighbour slows both sides alike.
    for _ in 0..rounds {
        // SAFETY: bench_ffi_empty takes nothing and does nothing.
        empty = empty.min(best_ns(batches, calls, || unsafe { bench_ffi_empty() }));
        raw = raw.min(best_ns(batches, calls, || {
            let mut n = 0;
            // SAFETY: a live handle and a valid out-pointer.
            black_box(unsafe { cblob::sys::cblob_blob_count(black_box(blob.as_ptr()), &mut n) });
            black_box(n);
        }));
        count = count.min(best_ns(batches, calls, || {
            black_box(black_box(&blob).count());
        }));
    }
    println!("RESULT rust {empty:.2} {raw:.2} {count:.2}");
    Ok(())
}
