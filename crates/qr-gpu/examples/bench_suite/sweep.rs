//! `--sweep`: times every sweep row (or, with `--once`, runs each once
//! for a profiler).

use std::time::Duration;

use qr_core::{Backend, BenchOptions, Shape, geqrf};
use qr_gpu::GpuBackend;
use qr_verify::{Spec, generate};

use super::inputs_for;
use super::variants::{variant_plan, variants};

/// Times tuning variants on the shapes each knob matters for.
pub(super) fn sweep(gpu: &GpuBackend) -> Result<(), Box<dyn std::error::Error>> {
    let mut variants = variants();
    let opts = BenchOptions {
        warmup: 1,
        min_reps: 3,
        max_reps: 10,
        target_rel_error: 0.02,
        budget: Duration::from_secs(2),
        flush_bytes: 256 << 20,
    };
    // `--only A,B` keeps the rows of knobs A and B (`Tuning` field names).
    let args: Vec<String> = std::env::args().collect();
    if let Some(only) = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
    {
        let only: Vec<&str> = only.split(',').collect();
        let known = |o: &&str| variants.iter().any(|v| v.knob == *o);
        if let Some(o) = only.iter().find(|o| !known(o)) {
            return Err(format!("--only {o}: no sweep row has that knob").into());
        }
        variants.retain(|v| only.contains(&v.knob));
    }
    // `--once SPEC`: one factorization of SPEC per remaining variant, untimed
    // (for a profiler that records every kernel of it).
    if let Some(once) = args
        .iter()
        .position(|a| a == "--once")
        .and_then(|i| args.get(i + 1))
    {
        let spec: Spec = once.parse()?;
        let shape = Shape::new(spec.batch, spec.n)?;
        let a = generate(&spec, 1000);
        for v in variants.iter().filter(|v| v.case == once.as_str()) {
            let b = gpu
                .clone()
                .with_tuning(v.tuning.clone())
                .with_strategy(v.strategy)
                .with_plan_edit(v.edit.clone());
            let f = geqrf(&b, shape, &a)?;
            println!(
                "| {once} | {} = {} | {} | once, info ok: {} |",
                v.knob,
                v.value,
                b.plan(shape)?,
                f.all_ok()
            );
        }
        return Ok(());
    }
    // Every variant's kernels compiled up front on every core (kept in the
    // on-disk PTX cache), not one module at a time between timings.
    let start = std::time::Instant::now();
    let plans: Vec<_> = variants
        .iter()
        .filter_map(|v| variant_plan(v, gpu.device()))
        .collect();
    // A module that fails here fails its variants' rows below, not the sweep.
    match gpu.prepare_plans(&plans) {
        Ok(compiled) => println!(
            "compiled {compiled} kernel modules ahead for {} plans in {:.1} s",
            plans.len(),
            start.elapsed().as_secs_f64()
        ),
        Err(e) => println!("compiling ahead failed, variants compile as they run: {e}"),
    }
    // Group by case so that each case's inputs are generated once.
    variants.sort_by_key(|v| v.case);
    println!("| case | knob | plan | us |");
    println!("|---|---|---|---|");
    let mut cache: Option<(String, Vec<Vec<f32>>)> = None;
    for v in variants {
        let (sp, knob) = (v.case, format!("{} = {}", v.knob, v.value));
        let spec: Spec = sp.parse()?;
        let shape = Shape::new(spec.batch, spec.n)?;
        if cache.as_ref().is_none_or(|(k, _)| k != sp) {
            cache = Some((sp.to_string(), inputs_for(&spec, 8)));
        }
        let inputs = &cache.as_ref().expect("set").1;
        let views: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
        let b = gpu
            .clone()
            .with_tuning(v.tuning)
            .with_strategy(v.strategy)
            .with_plan_edit(v.edit);
        // A variant the device cannot run is a row of the table, not the end.
        let (plan, t) = match b
            .plan(shape)
            .and_then(|p| Ok((p, b.bench(shape, &views, &opts)?)))
        {
            Ok(x) => x,
            Err(e) => {
                println!("| {sp} | {knob} | not run: {e} | |");
                continue;
            }
        };
        println!(
            "| {sp} | {knob} | {plan} | {:.1} |",
            t.mean.as_secs_f64() * 1e6
        );
    }
    Ok(())
}
