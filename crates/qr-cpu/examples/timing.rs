//! Times `CpuBackend` on dense randn batches, for the tables in
//! `docs/perf/qr-cpu.md`.
//!
//! ```text
//! cargo run --release -p qr-cpu --example timing -- [--block B] [--leaf L] [--wide-block W]
//!     [--wide-min-n N] [--small-n S]
//!     [--batch-min M] [--batch-work W] [--par-cols C] [--reps R]
//!     [--op geqrf|orgqr|ormqr] [--side left|right] [--trans n|t]
//!     [--orgqr-small-n S] [--orgqr-block B] [--ormqr-small-n S] [--ormqr-block B]
//!     [--q-wide-block W] [--q-wide-min-n N] BATCH,N ...
//! ```
//! Prints, per shape, the minimum and median wall-clock milliseconds per
//! batch over `R` repetitions (after one warm-up). On a shared machine the
//! minimum is the figure to compare: other processes only ever add time.
//! `orgqr` and `ormqr` are timed from the input's `geqrf` (untimed);
//! `ormqr` applies `op(Q)` (default `Q^T` from the left) to the input itself,
//! `k = n`, as `qr bench --op ormqr` does.

use std::time::Instant;

use qr_core::{ApplyQ, Backend, BatchRef, Factorization, Info, Reflectors, Shape, Side, Transpose};
use qr_cpu::{CpuBackend, QTuning, Tuning};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

fn main() {
    let mut tuning = Tuning::default();
    let mut q_tuning = QTuning::default();
    let mut op = "geqrf".to_string();
    let mut apply = ApplyQ::QT_LEFT;
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
            "--batch-work" => tuning.batch_parallel_min_work = value(),
            "--par-cols" => tuning.par_update_min_cols = value(),
            "--reps" => reps = value(),
            "--orgqr-small-n" => q_tuning.orgqr_small_n = value(),
            "--orgqr-block" => q_tuning.orgqr_block = value(),
            "--ormqr-small-n" => q_tuning.ormqr_small_n = value(),
            "--ormqr-block" => q_tuning.ormqr_block = value(),
            "--q-wide-block" => q_tuning.wide_block = value(),
            "--q-wide-min-n" => q_tuning.wide_block_min_n = value(),
            "--op" => op = args.next().expect("--op needs geqrf, orgqr or ormqr"),
            "--side" => {
                apply.side = match args.next().as_deref() {
                    Some("right") => Side::Right,
                    _ => Side::Left,
                }
            }
            "--trans" => {
                apply.transpose = match args.next().as_deref() {
                    Some("n") => Transpose::No,
                    _ => Transpose::Yes,
                }
            }
            spec => {
                let (b, n) = spec.split_once(',').expect("shape as BATCH,N");
                shapes.push((b.parse::<usize>().unwrap(), n.parse::<usize>().unwrap()));
            }
        }
    }
    let backend = CpuBackend::with_tuning(tuning.clone()).with_q_tuning(q_tuning.clone());
    println!("{}", backend.describe());
    println!("{tuning:?}");
    println!("{q_tuning:?}; op {op} ({apply})");
    println!("| batch x n | min ms | median ms | GFLOP/s (min) |");
    println!("|---|---|---|---|");
    for (batch, n) in shapes {
        let shape = Shape::new(batch, n).unwrap();
        let mut rng = StdRng::seed_from_u64(42);
        let a: Vec<f32> = (0..shape.a_len())
            .map(|_| rng.sample::<f32, _>(StandardNormal))
            .collect();
        let mut out = Factorization::zeroed(shape).unwrap();
        let view = BatchRef::new(shape, &a).unwrap();
        if op != "geqrf" {
            backend
                .geqrf_into(view, out.as_batch_mut().unwrap())
                .unwrap();
        }
        let mut q = a.clone();
        let mut info = vec![Info::OK; batch];
        let mut times = Vec::with_capacity(reps);
        for rep in 0..=reps {
            if op == "ormqr" {
                q.copy_from_slice(&a);
            }
            let t0 = Instant::now();
            match op.as_str() {
                "geqrf" => backend.geqrf_into(view, out.as_batch_mut().unwrap()),
                "orgqr" => {
                    let f = Reflectors::new(shape, &out.h, &out.tau).unwrap();
                    backend.orgqr_into(f, &mut q, &mut info)
                }
                "ormqr" => {
                    let f = Reflectors::new(shape, &out.h, &out.tau).unwrap();
                    backend.ormqr_into(f, apply, n, &mut q, &mut info)
                }
                other => panic!("unknown --op {other}"),
            }
            .unwrap();
            let dt = t0.elapsed().as_secs_f64() * 1e3;
            if rep > 0 {
                times.push(dt);
            }
        }
        assert!(out.all_ok() && info.iter().all(|i| i.is_ok()));
        times.sort_by(f64::total_cmp);
        let (min, med) = (times[0], times[times.len() / 2]);
        // geqrf and orgqr: 4/3 n^3 per matrix; ormqr with k = n: 2 n^3.
        let per = if op == "ormqr" { 2.0 } else { 4.0 / 3.0 };
        let flops = batch as f64 * per * (n as f64).powi(3);
        println!(
            "| {batch} x {n} | {min:.3} | {med:.3} | {:.1} |",
            flops / (min * 1e-3) / 1e9
        );
    }
}
