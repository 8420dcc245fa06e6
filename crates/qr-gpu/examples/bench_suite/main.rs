//! Times the 14 benchmark shapes on the GPU engine and the cuSOLVER peer with
//! the device-event bench, gating a capped slice of each case first.
//! `cargo run -p qr-gpu --release --example bench_suite [--no-peer] [--sweep [--only KNOB,KNOB] [--once SPEC]]` (KNOB: a `Tuning` field name, exactly, or `schedule.graph`)

use std::time::Duration;

use qr_core::{Backend, BenchOptions, Shape, geqrf};
use qr_gpu::GpuBackend;
use qr_gpu::peers::CusolverBackend;
use qr_verify::{Spec, benchmark_set, generate, geomean};

mod sweep;
mod variants;

use sweep::sweep;

fn inputs_for(sp: &Spec, max: usize) -> Vec<Vec<f32>> {
    let bytes = sp.batch * sp.n * sp.n * 4;
    let count = ((256usize << 20) / bytes).clamp(1, max);
    (0..count).map(|i| generate(sp, 1000 + i as u64)).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let peer = !std::env::args().any(|a| a == "--no-peer");
    let gpu = GpuBackend::new(0)?;
    println!("{}", gpu.describe());
    if std::env::args().any(|a| a == "--sweep") {
        return sweep(&gpu);
    }
    let cus = if peer {
        Some(CusolverBackend::new(0)?)
    } else {
        None
    };
    let opts = BenchOptions {
        warmup: 1,
        min_reps: 5,
        max_reps: 20,
        target_rel_error: 0.01,
        budget: Duration::from_secs(3),
        flush_bytes: 256 << 20,
    };
    let peer_opts = BenchOptions {
        min_reps: 2,
        max_reps: 3,
        budget: Duration::from_secs(2),
        ..opts.clone()
    };
    let shapes = benchmark_set()
        .iter()
        .map(Spec::shape)
        .collect::<Result<Vec<_>, _>>()?;
    gpu.prepare(&shapes)?;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    println!(
        "| case | plan | gpu (us) | rel err | cusolver (us) | speed-up | gate sfr / orth (first 8 matrices) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for sp in benchmark_set() {
        let shape = Shape::new(sp.batch, sp.n)?;
        let inputs = inputs_for(&sp, 50);
        let views: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
        // Gate the first 8 matrices of the first input (untimed).
        let cap = sp.batch.min(8);
        let small = Shape::new(cap, sp.n)?;
        let a0 = &inputs[0][..cap * sp.n * sp.n];
        let f = geqrf(&gpu, small, a0)?;
        let rep = qr_verify::check(small, a0, &f.h, &f.tau)?;
        let t = gpu.bench(shape, &views, &opts)?;
        let us = t.mean.as_secs_f64() * 1e6;
        ours.push(us);
        let (cs, speed) = match &cus {
            Some(c) => {
                let ct = c.bench(shape, &views[..1], &peer_opts)?;
                let cus_us = ct.mean.as_secs_f64() * 1e6;
                theirs.push(cus_us);
                (format!("{cus_us:.1}"), format!("{:.1}x", cus_us / us))
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {sp} | {} | {us:.1} | {:.3} | {cs} | {speed} | {:.3} / {:.3}{} |",
            gpu.plan(shape)?.strategy(),
            t.rel_error,
            rep.worst_sfr(),
            rep.worst_orth(),
            if rep.meets_bar() { "" } else { " FAIL" }
        );
    }
    println!("geomean gpu {:.1} us", geomean(ours.iter().copied()));
    if !theirs.is_empty() {
        println!("geomean cusolver {:.1} us", geomean(theirs.iter().copied()));
    }
    Ok(())
}
