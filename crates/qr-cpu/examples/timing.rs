//! Times `CpuBackend` on dense randn batches, for the tables in
//! `docs/perf/qr-cpu.md`.
//!
//! ```text
//! cargo run --release -p qr-cpu --example timing -- [--block B] [--leaf L] [--wide-block W]
//!     [--wide-min-n N] [--small-n S]
//!     [--batch-min M] [--par-cols C] [--reps R] BATCH,N ...
//! ```
//! Prints, per shape, the minimum and median wall-clock milliseconds per
//! batch over `R` repetitions (after one warm-up). On a shared machine the
//! minimum is the figure to compare: other processes only ever add time.

use std::time::Instant;

use qr_core::{Backend, BatchRef, Factorization, Shape};
use qr_cpu::{CpuBackend, Tuning};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

fn main() {
    let mut tuning = Tuning::default();
    let mut reps = 7usize;
    let mut shapes = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{arg} needs a number"))
        };
        match arg.as_str() {
            "--block" => tuning.block = value(),
            "--leaf" => tuning.panel_leaf = value(),
            "--wide-block" => tuning.wide_block = value(),
            "--wide-min-n" => tuning.wide_block_min_n = value(),
            "--small-n" => tuning.small_n = value(),
            "--batch-min" => tuning.batch_parallel_min = value(),
            "--par-cols" => tuning.par_update_min_cols = value(),
            "--reps" => reps = value(),
            spec => {
                let (b, n) = spec.split_once(',').expect("shape as BATCH,N");
                shapes.push((b.parse::<usize>().unwrap(), n.parse::<usize>().unwrap()));
            }
        }
    }
    let backend = CpuBackend::with_tuning(tuning.clone());
    println!("{}", backend.describe());
    println!("{tuning:?}");
    println!("| batch x n | min ms | median ms | GFLOP/s (min) |");
    println!("|---|---|---|---|");
    for (batch, n) in shapes {
        let shape = Shape::new(batch, n).unwrap();
        let mut rng = StdRng::seed_from_u64(42);
        let a: Vec<f32> = (0..shape.a_len())
            .map(|_| rng.sample::<f32, _>(StandardNormal))
            .collect();
        let mut out = Factorization::zeroed(shape).unwrap();
        let mut times = Vec::with_capacity(reps);
        for rep in 0..=reps {
            let t0 = Instant::now();
            backend
                .geqrf_into(
                    BatchRef::new(shape, &a).unwrap(),
                    out.as_batch_mut().unwrap(),
                )
                .unwrap();
            let dt = t0.elapsed().as_secs_f64() * 1e3;
            if rep > 0 {
                times.push(dt);
            }
        }
        assert!(out.all_ok());
        times.sort_by(f64::total_cmp);
        let (min, med) = (times[0], times[times.len() / 2]);
        let flops = batch as f64 * 4.0 / 3.0 * (n as f64).powi(3);
        println!(
            "| {batch} x {n} | {min:.3} | {med:.3} | {:.1} |",
            flops / (min * 1e-3) / 1e9
        );
    }
}
