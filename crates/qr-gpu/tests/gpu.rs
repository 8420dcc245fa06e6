//! GPU tests. Without a device every test is reported as ignored, after a
//! one-line reason; `QR_REQUIRE_GPU=1` (the project's one environment
//! variable, read here only) turns a missing device into a failure.

use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use qr_core::{Backend, Info, Shape, geqrf};
use qr_cpu::CpuBackend;
use qr_gpu::peers::{CublasBatchedBackend, CusolverBackend};
use qr_gpu::{GpuBackend, Strategy};
use qr_verify::{Case, Spec, generate};

#[path = "gpu/behaviour.rs"]
mod behaviour;
#[path = "gpu/failure_paths.rs"]
mod failure_paths;
#[path = "gpu/q_ops.rs"]
mod q_ops;

type Test = fn(&Arc<GpuBackend>) -> Result<(), Failed>;
type BoxedTest = Box<dyn Fn(&Arc<GpuBackend>) -> Result<(), Failed> + Send + Sync>;

fn spec(batch: usize, n: usize, cond: f64, case: Case) -> Spec {
    Spec {
        batch,
        n,
        cond,
        case,
    }
}

/// Factors `a` with `backend` and checks the project's bar on every matrix.
fn gate(backend: &dyn Backend, shape: Shape, a: &[f32], what: &str) -> Result<(), Failed> {
    let f = geqrf(backend, shape, a)?;
    if !f.all_ok() {
        return Err(format!("{what}: info {:?} on finite input", f.info).into());
    }
    let report = qr_verify::check(shape, a, &f.h, &f.tau)?;
    if !report.meets_bar() {
        return Err(format!(
            "{what}: worst sfr {:.3}, orth {:.3} (bar 5, 25)",
            report.worst_sfr(),
            report.worst_orth()
        )
        .into());
    }
    Ok(())
}

fn batch_for(n: usize) -> usize {
    match n {
        0..=256 => 3,
        257..=1024 => 2,
        _ => 1,
    }
}

/// Sizes around each strategy's limits.
fn sizes(g: &GpuBackend, s: Strategy) -> Vec<usize> {
    let mut v: Vec<usize> = match s {
        Strategy::Smem => vec![1, 2, 31, 32, 33, 65, 120, 128, 176, 200, 230],
        Strategy::Blocked => vec![1, 2, 31, 32, 33, 65, 120, 240, 511, 513, 1000],
        Strategy::Cluster => vec![1, 2, 31, 33, 65, 240, 257, 511, 513, 1000, 2047, 2048, 4096],
        Strategy::Large => vec![1, 2, 31, 33, 65, 240, 511, 513, 1000, 2047, 2048, 4096],
    };
    match s {
        Strategy::Smem => v.push(qr_gpu::smem_fit_n(g.device())),
        Strategy::Blocked => v.push(qr_gpu::panel_fit_rows(g.device())),
        Strategy::Cluster | Strategy::Large => {}
    }
    v
}

/// Gates `b` at each order of `ns` (batch `batch_for(n)`, condition 2, the
/// qr_v2 cases in turn from `case0`; input seeded `seed` plus the index).
fn gate_orders(
    b: &GpuBackend,
    ns: &[usize],
    case0: usize,
    seed: u64,
    label: &str,
) -> Result<(), Failed> {
    for (i, &n) in ns.iter().enumerate() {
        let case = Case::ALL_QR_V2[(i + case0) % Case::ALL_QR_V2.len()];
        let sp = spec(batch_for(n), n, 2.0, case);
        let a = generate(&sp, seed + i as u64);
        gate(b, sp.shape()?, &a, &format!("{label} {sp}"))?;
    }
    Ok(())
}

/// The cuBLAS SGEMM trailing update (the fallback of devices without tf32
/// tensor cores) on every panel strategy, sizes around the limits.
fn sgemm_trailing(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        tensor_trailing: false,
        ..qr_gpu::Tuning::default()
    };
    for s in [Strategy::Blocked, Strategy::Cluster, Strategy::Large] {
        let b = (**g)
            .clone()
            .with_tuning(tuning.clone())
            .with_strategy(Some(s));
        gate_orders(&b, &[33, 200, 513, 1000], 3, 300, &format!("{s} sgemm"))?;
    }
    Ok(())
}

/// The cluster panel's pull meeting (`Tuning::cluster_push_meet` off; push
/// is the default): every distribution and sizes across cluster sizes, each
/// bitwise equal to the push meeting's result (both add the same values in
/// the same order).
fn cluster_push_meet(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let push = (**g).clone().with_strategy(Some(Strategy::Cluster));
    let pull = push.clone().with_tuning(qr_gpu::Tuning {
        cluster_push_meet: false,
        ..qr_gpu::Tuning::default()
    });
    let specs = sizes_and_cases(&[33, 240, 513, 1000, 2048, 4096], (2, 700, 2.0), 10);
    same_bits(&push, &pull, &specs, 900, "cluster push meet")
}

/// The register panel's cluster loops: one meeting per reflector
/// (`Tuning::reg_panel_cluster_one_barrier`, the default) and two: see
/// `panel_variant`, plus orders that take clusters of 2 to 8 blocks.
fn register_cluster_meetings(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for one in [true, false] {
        let tuning = qr_gpu::Tuning {
            reg_panel_cluster_one_barrier: one,
            ..qr_gpu::Tuning::default()
        };
        let label = format!("register cluster one barrier {one}");
        panel_variant(g, &tuning, Strategy::Cluster, &label, 3000)?;
        let b = (**g)
            .clone()
            .with_tuning(tuning)
            .with_strategy(Some(Strategy::Cluster));
        gate_orders(&b, &[2048, 3000, 4096], 2, 3200, &label)?;
    }
    Ok(())
}

/// The tensor-core update with each tile's rows split over a cluster
/// (`Tuning::tensor_row_split`): with 16 rows per block at least, so that
/// small orders split too (chunks of one row and empty ones included), on
/// both strategies, see `panel_variant`; then the default split against
/// none on few-matrix orders, each gated and run twice for the same bits.
fn tensor_row_split(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let small = qr_gpu::Tuning {
        tensor_row_split_min_rows: 16,
        ..qr_gpu::Tuning::default()
    };
    for s in [Strategy::Blocked, Strategy::Cluster] {
        panel_variant(g, &small, s, &format!("{s} tensor row split"), 3300)?;
    }
    let off = (**g).clone().with_tuning(qr_gpu::Tuning {
        tensor_row_split: 0,
        ..qr_gpu::Tuning::default()
    });
    let on = (**g).clone();
    for (i, (batch, n)) in [(40, 352), (8, 1024), (2, 2048), (1, 4096)]
        .into_iter()
        .enumerate()
    {
        let case = Case::ALL_QR_V2[(i + 1) % Case::ALL_QR_V2.len()];
        let sp = spec(batch, n, 2.0, case);
        let a = generate(&sp, 3400 + i as u64);
        gate(&on, sp.shape()?, &a, &format!("tensor row split {sp}"))?;
        gate(&off, sp.shape()?, &a, &format!("no tensor row split {sp}"))?;
        let one = geqrf(&on, sp.shape()?, &a)?;
        let two = geqrf(&on, sp.shape()?, &a)?;
        if !same_outputs(&one, &two) {
            return Err(format!("tensor row split {sp}: two runs differ").into());
        }
    }
    Ok(())
}

/// Specs at orders `ns` (condition 2, cycling through the qr_v2 cases),
/// then every case at `(batch, n, cond)`; each with its input's seed offset
/// (`cases_from` on for the second group).
fn sizes_and_cases(
    ns: &[usize],
    (batch, n, cond): (usize, usize, f64),
    cases_from: usize,
) -> Vec<(Spec, usize)> {
    let mut specs: Vec<_> = ns
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let case = Case::ALL_QR_V2[i % Case::ALL_QR_V2.len()];
            (spec(batch_for(n), n, 2.0, case), i)
        })
        .collect();
    specs.extend(
        Case::all()
            .enumerate()
            .map(|(i, case)| (spec(batch, n, cond, case), cases_from + i)),
    );
    specs
}

/// Gates `variant` on every spec (input seeded `seed` plus its offset) and
/// requires its H, tau and info bitwise equal to `reference`'s.
fn same_bits(
    variant: &GpuBackend,
    reference: &GpuBackend,
    specs: &[(Spec, usize)],
    seed: u64,
    label: &str,
) -> Result<(), Failed> {
    for (sp, i) in specs {
        let a = generate(sp, seed + *i as u64);
        gate(variant, sp.shape()?, &a, &format!("{label} {sp}"))?;
        let one = geqrf(variant, sp.shape()?, &a)?;
        let two = geqrf(reference, sp.shape()?, &a)?;
        if !same_outputs(&one, &two) {
            return Err(format!("{label} {sp}: differs from the reference").into());
        }
    }
    Ok(())
}

/// The blocked panel's two-rows-per-warp update (`Tuning::panel_row_pairs`,
/// off by default): see `panel_variant`.
fn panel_row_pairs(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        panel_row_pairs: true,
        ..qr_gpu::Tuning::default()
    };
    panel_variant(g, &tuning, Strategy::Blocked, "panel row pairs", 1000)
}

/// The blocked panel with one block barrier per reflector
/// (`Tuning::panel_one_barrier`, the default), with two reflectors per
/// barrier (`Tuning::panel_two_step`), with float32 reflectors
/// (`Tuning::float_reflector`; its row loop plain and software-pipelined,
/// `Tuning::panel_pipeline_max_threads`) and with two barriers per reflector:
/// see `panel_variant` (rank-deficient and 1e-30 inputs take the double
/// redo, nearly collinear columns the two-step loop's fallback).
fn panel_barriers(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for (one_barrier, two_step, float, pipe) in [
        (true, false, false, 0),
        (true, false, true, 0),
        (true, false, true, 1024),
        (true, true, false, 0),
        (false, false, false, 0),
    ] {
        let tuning = qr_gpu::Tuning {
            panel_one_barrier: one_barrier,
            panel_two_step: two_step,
            blocked_tall_panel_two_step: two_step,
            float_reflector: float,
            panel_pipeline_max_threads: pipe,
            ..qr_gpu::Tuning::default()
        };
        let label = format!(
            "panel one barrier {one_barrier}, two step {two_step}, float reflector {float}, pipelined up to {pipe} threads"
        );
        panel_variant(g, &tuning, Strategy::Blocked, &label, 1300)?;
    }
    Ok(())
}

/// The `smem` kernels on each matrix's trailing corner
/// (`Tuning::corner_max_n`, off by default): off, up to 64 columns (the register kernel's
/// range), and up to 160 (the shared-memory kernels', with one and with
/// three barriers per column), on the blocked and cluster paths: see
/// `panel_variant` (its sizes put corners of 33 to 159 columns after one
/// or more panels).
fn corner(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for (max, one_barrier, strategies) in [
        (0, true, &[Strategy::Blocked][..]),
        (64, true, &[Strategy::Blocked, Strategy::Cluster][..]),
        (160, true, &[Strategy::Blocked, Strategy::Cluster][..]),
        (160, false, &[Strategy::Blocked][..]),
    ] {
        let tuning = qr_gpu::Tuning {
            corner_max_n: max,
            smem_one_barrier: one_barrier,
            ..qr_gpu::Tuning::default()
        };
        for &s in strategies {
            let label = format!("{s} corner up to {max}, smem one barrier {one_barrier}");
            panel_variant(g, &tuning, s, &label, 1400)?;
        }
    }
    Ok(())
}

/// The four-columns-per-lane panel update (`Tuning::panel_quad`) with one
/// block per matrix (256 and 512 threads) and with blocks meeting through
/// global memory (`large`): see `panel_variant`.
fn panel_quad(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for threads in [256, 512] {
        let tuning = qr_gpu::Tuning {
            panel_quad: true,
            blocked_panel_threads: threads,
            large_panel_threads: threads,
            ..qr_gpu::Tuning::default()
        };
        for s in [Strategy::Blocked, Strategy::Large] {
            panel_variant(g, &tuning, s, &format!("{s} panel quad {threads}"), 1200)?;
        }
    }
    Ok(())
}

/// The `smem` kernels that keep the matrix in shared memory, with three
/// barriers per column and with one (`Tuning::smem_one_barrier`,
/// `Tuning::smem_register_max_rows` 0; float32 reflectors, and double ones with
/// one barrier; the strategy tests run the default,
/// the register kernel for small orders): see `smem_variant`.
fn smem_shared_kernels(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for (one_barrier, float) in [(false, true), (true, true), (true, false)] {
        let tuning = qr_gpu::Tuning {
            smem_one_barrier: one_barrier,
            smem_register_max_rows: 0,
            float_reflector: float,
            ..qr_gpu::Tuning::default()
        };
        let label =
            format!("smem one barrier {one_barrier}, float reflector {float}, shared memory");
        smem_variant(g, &tuning, &label)?;
    }
    Ok(())
}

/// The register `smem` kernel beyond its default range (up to 16 rows per
/// thread at 4 and 8 threads per column): see `smem_variant`.
fn smem_registers(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for tpc in [4, 8] {
        let tuning = qr_gpu::Tuning {
            smem_tpc: [tpc; 3],
            smem_register_max_rows: 16,
            ..qr_gpu::Tuning::default()
        };
        smem_variant(g, &tuning, &format!("smem registers tpc {tpc}"))?;
    }
    Ok(())
}

/// The warp kernel (`Tuning::smem_warp_max_n`, off by default): orders 1
/// to 32 on every distribution, the planner's choice for them, inputs of
/// 1e-30s and 1e+30s with a zero column and two runs bitwise identical,
/// NaN and overflowing matrices beside finite ones, zero columns.
fn smem_warp(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        smem_warp_max_n: 32,
        ..qr_gpu::Tuning::default()
    };
    let b = (**g).clone().with_tuning(tuning);
    for n in [1, 2, 3, 5, 16, 17, 31, 32] {
        let p = b.plan(Shape::new(20, n)?)?;
        if p.strategy != Strategy::Smem || !p.warp {
            return Err(format!("n = {n}: the planner chose {p}").into());
        }
        for (i, case) in Case::all().enumerate() {
            let sp = spec(5, n, if i % 2 == 0 { 2.0 } else { 0.0 }, case);
            let a = generate(&sp, 1900 + 31 * n as u64 + i as u64);
            gate(&b, sp.shape()?, &a, &format!("smem warp {sp}"))?;
        }
    }
    let sp = spec(3, 29, 1.0, Case::Dense);
    extreme_scales_twice(&b, sp, (23, 11), "smem warp")?;
    // A NaN matrix and one whose R overflows f32 beside a finite one.
    let mut a = generate(&sp, 24);
    a[29 * 29 + 100] = f32::NAN;
    a[2 * 29 * 29..].iter_mut().for_each(|x| *x = 3.0e38);
    let f = geqrf(&b, sp.shape()?, &a)?;
    let filled = f.h[29 * 29..]
        .iter()
        .chain(&f.tau[29..])
        .all(|x| x.is_nan());
    if f.info != [Info::OK, Info::NON_FINITE, Info::OVERFLOW] || !filled {
        return Err(format!("smem warp: info {:?}, NaN-filled {filled}", f.info).into());
    }
    let one = Shape::new(1, 29)?;
    let report = qr_verify::check(one, &a[..29 * 29], &f.h[..29 * 29], &f.tau[..29])?;
    if !report.meets_bar() {
        return Err("smem warp: the finite matrix beside flagged ones fails the bar".into());
    }
    zero_columns_on(&b, "smem warp", 32)
}

/// The GPU backend of `g`'s device with `tuning`, the blocked strategy forced.
fn blocked(g: &Arc<GpuBackend>, tuning: qr_gpu::Tuning) -> GpuBackend {
    (**g)
        .clone()
        .with_tuning(tuning)
        .with_strategy(Some(Strategy::Blocked))
}

/// `sp`'s input (seeded `seed`) times 1e-30 and times 1e+30, with column
/// `zero` zeroed, passes the gate on `b`, and two runs give the same bits.
fn extreme_scales_twice(
    b: &GpuBackend,
    sp: Spec,
    (seed, zero): (u64, usize),
    label: &str,
) -> Result<(), Failed> {
    for scale in [1e-30f32, 1e30] {
        let mut a: Vec<f32> = generate(&sp, seed).iter().map(|x| x * scale).collect();
        a.iter_mut().skip(zero).step_by(sp.n).for_each(|x| *x = 0.0);
        gate(b, sp.shape()?, &a, &format!("{label} times {scale:e}"))?;
        let one = geqrf(b, sp.shape()?, &a)?;
        let two = geqrf(b, sp.shape()?, &a)?;
        if !same_outputs(&one, &two) {
            return Err(format!("{label}: two runs differ").into());
        }
    }
    Ok(())
}

/// An `smem` kernel variant: sizes up to the shared-memory limit, every
/// distribution, inputs of 1e-30s and 1e+30s with a zero column, two runs
/// bitwise identical, and a NaN matrix beside a finite one.
fn smem_variant(g: &Arc<GpuBackend>, tuning: &qr_gpu::Tuning, label: &str) -> Result<(), Failed> {
    let b = (**g)
        .clone()
        .with_tuning(tuning.clone())
        .with_strategy(Some(Strategy::Smem));
    for (i, n) in sizes(g, Strategy::Smem).into_iter().enumerate() {
        let case = Case::ALL_QR_V2[i % Case::ALL_QR_V2.len()];
        let sp = spec(batch_for(n), n, 2.0, case);
        let a = generate(&sp, 1500 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("{label} {sp}"))?;
    }
    // Orders every smem kernel takes by default or in the tests' tunings.
    for (i, case) in Case::all().enumerate() {
        let sp = spec(3, 60, if i % 2 == 0 { 2.0 } else { 0.0 }, case);
        let a = generate(&sp, 1600 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("{label} {sp}"))?;
    }
    let sp = spec(2, 57, 1.0, Case::Dense);
    extreme_scales_twice(&b, sp, (21, 20), label)?;
    // A NaN matrix beside a finite one: flagged and NaN-filled, the other
    // factored (each kernel has its own copy of the scan).
    let mut a = generate(&sp, 22);
    a[57 * 57 + 100] = f32::NAN;
    let f = geqrf(&b, sp.shape()?, &a)?;
    let flagged = f.h[57 * 57..]
        .iter()
        .chain(&f.tau[57..])
        .all(|x| x.is_nan());
    if f.info != [Info::OK, Info::NON_FINITE] || !flagged {
        return Err(format!(
            "{label}: NaN matrix info {:?}, NaN-filled {flagged}",
            f.info
        )
        .into());
    }
    let one = Shape::new(1, 57)?;
    let report = qr_verify::check(one, &a[..57 * 57], &f.h[..57 * 57], &f.tau[..57])?;
    if !report.meets_bar() {
        return Err(format!("{label}: the finite matrix beside a NaN one fails the bar").into());
    }
    Ok(())
}

/// A panel-kernel variant on strategy `s`: sizes around the 16-column
/// switch, the row groups and block limits, every distribution, inputs of
/// 1e-30s, and two runs bitwise identical.
fn panel_variant(
    g: &Arc<GpuBackend>,
    tuning: &qr_gpu::Tuning,
    s: Strategy,
    label: &str,
    seed: u64,
) -> Result<(), Failed> {
    let b = (**g)
        .clone()
        .with_tuning(tuning.clone())
        .with_strategy(Some(s));
    let orders = [1, 16, 17, 31, 33, 48, 49, 65, 200, 511, 513, 1000];
    gate_orders(&b, &orders, 0, seed, label)?;
    for (i, case) in Case::all().enumerate() {
        let sp = spec(3, 300, if i % 2 == 0 { 2.0 } else { 0.0 }, case);
        let a = generate(&sp, seed + 100 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("{label} {sp}"))?;
    }
    tiny_twice(&b, spec(2, 257, 1.0, Case::Dense), 19, label)
}

/// `sp`'s input (seeded `seed`) times 1e-30 passes the gate on `b`, and two
/// runs give the same bits.
fn tiny_twice(b: &GpuBackend, sp: Spec, seed: u64, label: &str) -> Result<(), Failed> {
    let tiny: Vec<f32> = generate(&sp, seed).iter().map(|x| x * 1e-30).collect();
    gate(b, sp.shape()?, &tiny, &format!("{label} {sp} times 1e-30"))?;
    let one = geqrf(b, sp.shape()?, &tiny)?;
    let two = geqrf(b, sp.shape()?, &tiny)?;
    if !same_outputs(&one, &two) {
        return Err(format!("{label}: two runs differ").into());
    }
    Ok(())
}

/// Panels running ahead on the priority stream (`Tuning::look_ahead`):
/// on the blocked and cluster strategies, sizes around one, two and three
/// panels and every distribution, each bitwise equal to the single-stream
/// result (the same operations in the same order per element).
fn look_ahead(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    // The row split sums a look-ahead tile's W in another order than the
    // same tile in a launch of many (by design), so it is off here.
    let base = qr_gpu::Tuning {
        tensor_row_split: 0,
        ..qr_gpu::Tuning::default()
    };
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let ahead = (**g)
            .clone()
            .with_strategy(Some(s))
            .with_tuning(qr_gpu::Tuning {
                look_ahead: true,
                ..base.clone()
            });
        let plain = ahead.clone().with_tuning(qr_gpu::Tuning {
            look_ahead: false,
            ..base.clone()
        });
        let specs = sizes_and_cases(&[33, 63, 64, 65, 96, 97, 200, 512, 1000], (3, 300, 0.0), 20);
        same_bits(&ahead, &plain, &specs, 1300, &format!("{s} look ahead"))?;
    }
    Ok(())
}

/// Bit-for-bit equality of two float slices (NaNs included).
fn same_f32_bits(x: &[f32], y: &[f32]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// Two factorizations with the same H and tau bit for bit (a float
/// comparison would let -0 pass for +0) and the same info.
fn same_outputs(x: &qr_core::Factorization, y: &qr_core::Factorization) -> bool {
    same_f32_bits(&x.h, &y.h) && same_f32_bits(&x.tau, &y.tau) && x.info == y.info
}

/// `rounds` device-API calls of `on` on `shape`, over two sets of buffers
/// in turn, each call with new contents (`input(round)`, written into its
/// set's input) after `before(round)`: every call's outputs must be bit
/// for bit `off`'s factorization of the same input. Returns the calls'
/// factorizations.
fn device_rounds(
    on: &GpuBackend,
    off: &GpuBackend,
    shape: qr_core::Shape,
    rounds: u64,
    input: &dyn Fn(u64) -> Vec<f32>,
    before: &dyn Fn(u64) -> Result<(), Failed>,
    label: &str,
) -> Result<Vec<qr_core::Factorization>, Failed> {
    let mut sets = Vec::new();
    for _ in 0..2 {
        let a0 = vec![0.0f32; shape.a_len()];
        sets.push((on.upload(&a0)?, on.alloc_outputs(shape)?));
    }
    let mut got = Vec::new();
    for round in 0..rounds {
        before(round)?;
        let a = input(round);
        let (da, out) = &mut sets[(round % 2) as usize];
        on.stream()
            .memcpy_htod(&a, da)
            .map_err(|e| format!("uploading: {e:?}"))?;
        on.geqrf_device(da, out)?;
        let mut f = qr_core::Factorization::zeroed(shape)?;
        on.download(out, f.as_batch_mut()?)?;
        let want = geqrf(off, shape, &a)?;
        if !same_f32_bits(&f.h, &want.h) || !same_f32_bits(&f.tau, &want.tau) || f.info != want.info
        {
            return Err(format!("{label}: device call {round} differs").into());
        }
        got.push(f);
    }
    Ok(got)
}

/// Plans run as CUDA graphs (`Tuning::graphs`, on for the blocked and
/// cluster paths without the checks stream; a call is recorded the second
/// time its plan, operands and workspace are seen and replayed after): on
/// both strategies, sizes around one, two and three panels and every
/// distribution, each bitwise equal to launch-by-launch queueing (the same
/// kernels); then through the device API, two sets of buffers in turn,
/// each call with new input contents (written into its set's input), and
/// another shape in between (the workspace moves, so the recordings that
/// name it are not replayed): every call's outputs are its own input's
/// factorization.
fn graphs(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let on = (**g).clone().with_strategy(Some(s));
        let off = on.clone().with_tuning(qr_gpu::Tuning {
            graphs: false,
            ..qr_gpu::Tuning::default()
        });
        let specs = sizes_and_cases(&[33, 64, 65, 97, 200, 512, 1000], (3, 300, 0.0), 20);
        same_bits(&on, &off, &specs, 2000, &format!("{s} graphs"))?;
        let small = spec(3, 200, 1.0, Case::Dense);
        let before = |round: u64| -> Result<(), Failed> {
            if round == 6 {
                // A larger shape grows the workspace between calls.
                let big = spec(2, 700, 1.0, Case::Dense);
                gate(
                    &on,
                    big.shape()?,
                    &generate(&big, 2099),
                    &format!("{s} graphs {big}"),
                )?;
            }
            Ok(())
        };
        let input = |round: u64| generate(&small, 2100 + round);
        let label = format!("{s} graphs");
        device_rounds(&on, &off, small.shape()?, 10, &input, &before, &label)?;
    }
    Ok(())
}

/// Graphs around the checks stream (`Tuning::graphs_beside_checks`, with
/// the stream forced on from any size, so the scan, the mid-factorization
/// overflow check and the final check run on the forked stream inside the
/// capture): on both strategies, sizes of one to three panels and every
/// distribution, bitwise equal to the same plans launch by launch; then
/// device-API calls over two buffer sets with new contents each, some with
/// a NaN in one matrix (its info and fill must replay too): every call's
/// outputs are its own input's factorization, bit for bit.
fn graphs_beside_checks(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let beside = qr_gpu::Tuning {
        checks_aside_min_l2: 0,
        graphs_beside_checks: true,
        ..qr_gpu::Tuning::default()
    };
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let on = (**g)
            .clone()
            .with_strategy(Some(s))
            .with_tuning(beside.clone());
        let off = on.clone().with_tuning(qr_gpu::Tuning {
            graphs: false,
            ..beside.clone()
        });
        let label = format!("{s} graphs beside checks");
        let specs = sizes_and_cases(&[33, 65, 97, 200, 512], (3, 300, 0.0), 20);
        same_bits(&on, &off, &specs, 2500, &label)?;
        let small = spec(3, 200, 1.0, Case::Dense);
        let shape = small.shape()?;
        let nan = |round: u64| round % 3 == 2;
        let input = |round: u64| {
            let mut a = generate(&small, 2600 + round);
            if nan(round) {
                // A NaN in matrix 1: flagged in info, its outputs filled.
                a[shape.n() * shape.n() + 7 + round as usize] = f32::NAN;
            }
            a
        };
        let got = device_rounds(&on, &off, shape, 8, &input, &|_| Ok(()), &label)?;
        for (round, f) in (0u64..).zip(&got) {
            if nan(round) && f.info[1] == qr_core::Info::OK {
                return Err(format!("{label}: call {round} missed the NaN").into());
            }
        }
    }
    Ok(())
}

/// A plan recorded as a graph on one thread while another thread uploads,
/// factors (a plan without graphs) and downloads through the same engine:
/// the engine's queueing lock keeps the other thread's work out of every
/// capture, so both threads get their own factorizations, bitwise equal to
/// launch-by-launch queueing, on every round (the first thread's key is
/// recorded on its second round and replayed after).
fn graphs_beside_another_thread(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let on = (**g).clone().with_strategy(Some(Strategy::Blocked));
    let off = on.clone().with_tuning(qr_gpu::Tuning {
        graphs: false,
        ..qr_gpu::Tuning::default()
    });
    let (s1, s2) = (
        spec(3, 200, 1.0, Case::Dense),
        spec(4, 48, 1.0, Case::Dense),
    );
    let (sh1, sh2) = (s1.shape()?, s2.shape()?);
    let (a1, a2) = (generate(&s1, 2400), generate(&s2, 2401));
    // The other thread's shape takes the default strategy: its reference
    // comes from the same backend, alone, before the threads start.
    let small = (**g).clone();
    let (w1, w2) = (geqrf(&off, sh1, &a1)?, geqrf(&small, sh2, &a2)?);
    let recorded = || -> Result<(), String> {
        let da = on.upload(&a1).map_err(|e| e.to_string())?;
        let mut out = on.alloc_outputs(sh1).map_err(|e| e.to_string())?;
        for round in 0..8 {
            on.geqrf_device(&da, &mut out).map_err(|e| e.to_string())?;
            let mut f = qr_core::Factorization::zeroed(sh1).map_err(|e| e.to_string())?;
            let batch = f.as_batch_mut().map_err(|e| e.to_string())?;
            on.download(&out, batch).map_err(|e| e.to_string())?;
            if !same_outputs(&f, &w1) {
                return Err(format!("graph thread, round {round}: differs"));
            }
        }
        Ok(())
    };
    let beside = || -> Result<(), String> {
        for round in 0..24 {
            let da = small.upload(&a2).map_err(|e| e.to_string())?;
            let mut out = small.alloc_outputs(sh2).map_err(|e| e.to_string())?;
            small
                .geqrf_device(&da, &mut out)
                .map_err(|e| e.to_string())?;
            let mut f = qr_core::Factorization::zeroed(sh2).map_err(|e| e.to_string())?;
            let batch = f.as_batch_mut().map_err(|e| e.to_string())?;
            small.download(&out, batch).map_err(|e| e.to_string())?;
            if !same_outputs(&f, &w2) {
                return Err(format!("other thread, round {round}: differs"));
            }
        }
        Ok(())
    };
    let (r1, r2) = std::thread::scope(|sc| {
        let t1 = sc.spawn(recorded);
        let t2 = sc.spawn(beside);
        let join = |t: std::thread::ScopedJoinHandle<'_, Result<(), String>>| {
            t.join().unwrap_or_else(|_| Err("a thread panicked".into()))
        };
        (join(t1), join(t2))
    });
    r1?;
    r2?;
    Ok(())
}

/// The previous panel's update of each panel's columns folded into the
/// panel (`Tuning::panel_fold`, the default for few matrices): the
/// strategy tests run it; here the unfolded path (a tensor-core launch of
/// that update between the panels), see `panel_variant`, and the fold
/// beside the mid-factorization check (`Tuning::checks_aside` forced),
/// bitwise equal to the check first.
fn panel_fold(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let off = qr_gpu::Tuning {
        panel_fold: false,
        ..qr_gpu::Tuning::default()
    };
    panel_variant(g, &off, Strategy::Blocked, "no fold", 2200)?;
    let aside = (**g)
        .clone()
        .with_strategy(Some(Strategy::Blocked))
        .with_tuning(qr_gpu::Tuning {
            checks_aside_min_l2: 0,
            ..qr_gpu::Tuning::default()
        });
    let first = aside.clone().with_tuning(qr_gpu::Tuning {
        checks_aside: false,
        ..qr_gpu::Tuning::default()
    });
    let specs = sizes_and_cases(&[65, 96, 97, 200, 512], (3, 300, 0.0), 20);
    same_bits(&aside, &first, &specs, 2300, "fold checks aside")
}

/// The input scan beside the first panel and update (`Tuning::checks_aside`)
/// on every panel strategy: sizes of one, two and three panels and every
/// distribution, each bitwise equal (H, tau and info) to the scan first.
fn checks_aside(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for s in [Strategy::Blocked, Strategy::Cluster, Strategy::Large] {
        let aside = (**g)
            .clone()
            .with_strategy(Some(s))
            .with_tuning(qr_gpu::Tuning {
                checks_aside: true,
                checks_aside_min_l2: 0,
                ..qr_gpu::Tuning::default()
            });
        let first = aside.clone().with_tuning(qr_gpu::Tuning {
            checks_aside: false,
            ..qr_gpu::Tuning::default()
        });
        let specs = sizes_and_cases(&[1, 32, 33, 64, 65, 200, 512], (3, 300, 0.0), 20);
        same_bits(&aside, &first, &specs, 1400, &format!("{s} checks aside"))?;
    }
    Ok(())
}

/// The tensor-core update with 4-warp blocks (`Tuning::tensor_warps` 4;
/// the default picks them only for batches of many waves) on every panel
/// strategy: sizes around its row and column steps, every distribution,
/// and two runs bitwise identical.
fn tensor_warps_4(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        tensor_warps: 4,
        ..qr_gpu::Tuning::default()
    };
    for s in [Strategy::Blocked, Strategy::Cluster, Strategy::Large] {
        let b = (**g)
            .clone()
            .with_tuning(tuning.clone())
            .with_strategy(Some(s));
        let label = format!("{s} tensor warps 4");
        gate_orders(&b, &[33, 65, 200, 513, 1000], 1, 700, &label)?;
        for (i, case) in Case::all().enumerate() {
            let sp = spec(3, 300, 2.0, case);
            let a = generate(&sp, 800 + i as u64);
            gate(&b, sp.shape()?, &a, &format!("{s} tensor warps 4 {sp}"))?;
        }
        let sp = spec(2, 257, 1.0, Case::Dense);
        let a = generate(&sp, 17);
        let one = geqrf(&b, sp.shape()?, &a)?;
        let two = geqrf(&b, sp.shape()?, &a)?;
        if !same_outputs(&one, &two) {
            return Err(format!("{s} tensor warps 4: two runs differ").into());
        }
    }
    Ok(())
}

/// The tensor-core update with A2 staged in shared memory
/// (`Tuning::tensor_stage_depth`, resident tiles and rings): on every panel
/// strategy, sizes around its row steps and the staging limit (tall updates
/// stream, later ones stage), every distribution, each bitwise equal to the
/// streaming update (the same products summed in the same order).
fn tensor_stage(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for (depth, warps, max_rows, ring) in [
        (3u32, 4u32, 1024usize, false),
        (2, 8, 300, false),
        (2, 4, 0, true),
        (3, 8, 0, true),
    ] {
        for s in [Strategy::Blocked, Strategy::Cluster, Strategy::Large] {
            let base = qr_gpu::Tuning {
                tensor_warps: warps,
                tensor_stage_depth: 0,
                ..qr_gpu::Tuning::default()
            };
            let plain = (**g)
                .clone()
                .with_strategy(Some(s))
                .with_tuning(base.clone());
            let staged = plain.clone().with_tuning(qr_gpu::Tuning {
                tensor_stage_depth: depth,
                tensor_stage_max_rows: max_rows,
                tensor_stage_ring: ring,
                ..base
            });
            let specs = sizes_and_cases(&[33, 65, 200, 513, 1000], (3, 300, 0.0), 30);
            let label =
                format!("{s} tensor stage {depth} warps {warps} rows {max_rows} ring {ring}");
            same_bits(&staged, &plain, &specs, 1400, &label)?;
        }
    }
    Ok(())
}

/// Two-level panels (`Tuning::two_level_min_batch_per_sm` 0 forces them):
/// see `panel_variant`; zero trailing columns starting in either half;
/// panels ahead on the priority stream bitwise equal to one stream.
fn two_level(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    // The row split sums a look-ahead tile's W in another order than the
    // same tile in a launch of many (by design), so the bitwise comparison
    // with and without look-ahead below runs with it off.
    let tuning = qr_gpu::Tuning {
        two_level_min_batch_per_sm: 0,
        tensor_row_split: 0,
        ..qr_gpu::Tuning::default()
    };
    panel_variant(g, &tuning, Strategy::Blocked, "two level", 1500)?;
    let b = blocked(g, tuning.clone());
    for n in [200, 300] {
        zero_columns_on(&b, "two level", n)?;
    }
    let plain = b.clone().with_tuning(qr_gpu::Tuning {
        look_ahead: false,
        ..tuning
    });
    let specs = sizes_and_cases(&[33, 48, 49, 64, 65, 97, 200, 512], (3, 300, 0.0), 40);
    same_bits(&b, &plain, &specs, 1600, "two level look ahead")
}

/// The register panel by halves (`Tuning::reg_panel_halves`, off by
/// default): the tall panels of a block alone at one row per thread (n from
/// 320 to 512), every distribution, inputs of 1e-30s, overflowing inputs
/// flagged as by the whole-row panel, and two runs bitwise identical.
fn register_panel_halves(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        reg_panel_halves: true,
        ..qr_gpu::Tuning::default()
    };
    let b = blocked(g, tuning);
    let plan = b.plan(Shape::new(40, 352)?)?;
    if !plan.panel.reg_halves {
        return Err(format!("halves not planned: {plan}").into());
    }
    gate_orders(
        &b,
        &[320, 333, 352, 383, 384, 416, 449, 480, 511, 512],
        0,
        3200,
        "halves",
    )?;
    for (i, case) in Case::all().enumerate() {
        let sp = spec(3, 352 + i, if i % 2 == 0 { 2.0 } else { 0.0 }, case);
        let a = generate(&sp, 3300 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("halves {sp}"))?;
    }
    tiny_twice(&b, spec(2, 400, 1.0, Case::Dense), 3400, "halves")?;
    let whole = (**g).clone().with_strategy(Some(Strategy::Blocked));
    overflow_flagged_alike(&b, &whole, &[333, 512], "halves", false)
}

/// The tensor-core update with the split's low parts rounded to tf32 too
/// (`Tuning::tensor_lo_truncate` off; on by default): on the blocked and
/// cluster strategies, sizes around the panel and tile edges, every
/// distribution, inputs of 1e-30s and two runs bitwise identical. The
/// default (truncated) side is what every other test runs.
fn tensor_lo_rounded(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        tensor_lo_truncate: false,
        ..qr_gpu::Tuning::default()
    };
    panel_variant(g, &tuning, Strategy::Blocked, "tensor lo rounded", 3000)?;
    panel_variant(
        g,
        &tuning,
        Strategy::Cluster,
        "cluster tensor lo rounded",
        3100,
    )
}

/// Inputs whose R overflows, in a panel (matrix 1) and in R's rows an
/// update writes (matrix 2), are flagged `OVERFLOW` by `b` at each order of
/// `ns`, their neighbour untouched, with the same info as `reference` and,
/// where `same_bits`, the same bits.
fn overflow_flagged_alike(
    b: &GpuBackend,
    reference: &GpuBackend,
    ns: &[usize],
    label: &str,
    same_bits: bool,
) -> Result<(), Failed> {
    for &n in ns {
        let shape = Shape::new(3, n)?;
        let mut a = generate(&spec(3, n, 1.0, Case::Dense), 2900 + n as u64);
        let len = n * n;
        let max = f32::MAX;
        let c = max / (n as f32).sqrt() * 1.5;
        for i in 0..n {
            // Matrix 1: column 0 of norm MAX sqrt(n) / 2; matrix 2: column 0
            // all ones and column 40 all c, so R[0][40] is 1.5 MAX, written
            // by the update after the first panel.
            a[len + i * n] = max / 2.0;
            a[2 * len + i * n] = 1.0;
            a[2 * len + i * n + 40] = c;
        }
        let one = geqrf(b, shape, &a)?;
        let two = geqrf(reference, shape, &a)?;
        let what = format!("{label}, overflow at n = {n}");
        if one.info[1] != Info::OVERFLOW || one.info[2] != Info::OVERFLOW || !one.info[0].is_ok() {
            return Err(format!("{what}: info {:?}", one.info).into());
        }
        if same_bits && !(same_f32_bits(&one.h, &two.h) && same_f32_bits(&one.tau, &two.tau)) {
            return Err(format!("{what}: differs from the reference").into());
        }
        if one.info != two.info {
            return Err(format!("{what}: info differs from the reference").into());
        }
    }
    Ok(())
}

/// The writers' overflow checks (`Tuning::fused_checks`, on): on the
/// blocked and cluster strategies, every distribution and sizes around the
/// panel and tile edges, bitwise equal to the separate checks, and inputs
/// whose R overflows (in a panel, and in the R rows an update writes) are
/// flagged `OVERFLOW` the same way, their neighbours untouched.
fn fused_checks(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let off = qr_gpu::Tuning {
        fused_checks: false,
        ..qr_gpu::Tuning::default()
    };
    let on = qr_gpu::Tuning::default();
    let orders: &[usize] = &[33, 64, 97, 333, 512, 1000];
    switch_keeps_bits(g, &off, &on, (orders, (3, 400, 0.0)), 2800, "fused checks")?;
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let on = (**g).clone().with_strategy(Some(s));
        let plan = on.plan(Shape::new(3, 400)?)?;
        if !plan.panel.fused_checks {
            return Err(format!("{s}: no fused checks planned: {plan}").into());
        }
        let sep = on.clone().with_tuning(off.clone());
        overflow_flagged_alike(&on, &sep, &[333, 513], &format!("{s} fused checks"), true)?;
    }
    Ok(())
}

/// `variant` against `base` on the blocked and cluster strategies, on
/// the orders `ns` (around the panel and tile edges; the tensor-core
/// update's switches act only on its staged orders, divisible by 4) and
/// every distribution at `cases`: the bits must be `base`'s.
fn switch_keeps_bits(
    g: &Arc<GpuBackend>,
    base: &qr_gpu::Tuning,
    variant: &qr_gpu::Tuning,
    (ns, cases): (&[usize], (usize, usize, f64)),
    seed: u64,
    label: &str,
) -> Result<(), Failed> {
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let plain = (**g)
            .clone()
            .with_strategy(Some(s))
            .with_tuning(base.clone());
        let on = plain.clone().with_tuning(variant.clone());
        let specs = sizes_and_cases(ns, cases, 20);
        same_bits(&on, &plain, &specs, seed, &format!("{s} {label}"))?;
    }
    Ok(())
}

/// L2 eviction priorities in the tensor-core update
/// (`Tuning::tensor_l2_hints`, 1 and 2, here for batches of any size) and
/// its update pass taken last slab first (`Tuning::tensor_update_reverse`,
/// with the ring and with A2 resident): bitwise equal to the plain kernel
/// (`switch_keeps_bits`), as neither a cache policy nor the order of
/// independent tile rows changes a value.
fn tensor_l2_hints(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for (hints, reverse, ring) in [
        (1, false, true),
        (2, false, true),
        (0, true, true),
        (1, true, true),
        (0, true, false),
    ] {
        let base = qr_gpu::Tuning {
            tensor_stage_ring: ring,
            tensor_l2_hints_min_l2: 0,
            ..qr_gpu::Tuning::default()
        };
        let variant = qr_gpu::Tuning {
            tensor_l2_hints: hints,
            tensor_update_reverse: reverse,
            ..base.clone()
        };
        let plan = (**g)
            .clone()
            .with_tuning(variant.clone())
            .plan(Shape::new(3, 512)?)?;
        if plan.panel.tensor_l2_hints != hints {
            return Err(format!("l2 hints {hints} not planned for a small batch: {plan}").into());
        }
        let orders: &[usize] = &[33, 64, 97, 333, 512, 1000];
        let label = format!("l2 hints {hints} reverse {reverse} ring {ring}");
        switch_keeps_bits(g, &base, &variant, (orders, (3, 400, 0.0)), 3200, &label)?;
    }
    Ok(())
}

/// Groups of a batch on lanes of their own streams (`Tuning::batch_lanes`):
/// every distribution, batches that do and do not divide evenly (and
/// fewer matrices than lanes), each gated and bitwise equal to one lane.
/// The row split decides by a launch's tile count, which a group changes,
/// so it is off on both sides; lanes are for plans outside graphs.
fn batch_lanes(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let base = qr_gpu::Tuning {
        tensor_row_split: 0,
        graphs: false,
        batch_lanes_min_batch_per_sm: 0,
        ..qr_gpu::Tuning::default()
    };
    let one = (**g)
        .clone()
        .with_strategy(Some(Strategy::Blocked))
        .with_tuning(base.clone());
    for lanes in [2, 3, 4] {
        let many = one.clone().with_tuning(qr_gpu::Tuning {
            batch_lanes: lanes,
            ..base.clone()
        });
        let plan = many.plan(Shape::new(9, 200)?)?;
        if plan.panel.lanes != lanes || plan.graph {
            return Err(format!("{lanes} lanes not planned: {plan}").into());
        }
        let mut specs = sizes_and_cases(&[33, 64, 97, 200, 512], (9, 150, 0.0), 10);
        specs.push((spec(2, 100, 1.0, Case::Dense), 30));
        same_bits(&many, &one, &specs, 2700, &format!("{lanes} lanes"))?;
    }
    Ok(())
}

/// The register-resident panel kernel (2 rows per thread by default) on
/// the blocked and cluster paths: sizes around its
/// block limits, every distribution, inputs of 1e-30s, and two runs
/// bitwise identical; then its fold (`Tuning::reg_panel_fold`, off by
/// default) through the same sizes and distributions, and beside the
/// checks stream bitwise equal to the checks first.
fn register_panel(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        reg_panel_rows_per_thread: 2,
        ..qr_gpu::Tuning::default()
    };
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let b = (**g)
            .clone()
            .with_tuning(tuning.clone())
            .with_strategy(Some(s));
        for (i, n) in [1, 31, 33, 65, 200, 511, 513, 1000, 2048]
            .into_iter()
            .enumerate()
        {
            if s == Strategy::Blocked && n > 1024 {
                continue;
            }
            let case = Case::ALL_QR_V2[i % Case::ALL_QR_V2.len()];
            let sp = spec(batch_for(n), n, 2.0, case);
            let a = generate(&sp, 500 + i as u64);
            gate(&b, sp.shape()?, &a, &format!("{s} register panel {sp}"))?;
        }
        for (i, case) in Case::all().enumerate() {
            let sp = spec(3, 300, 2.0, case);
            let a = generate(&sp, 600 + i as u64);
            gate(&b, sp.shape()?, &a, &format!("{s} register panel {sp}"))?;
        }
        tiny_twice(
            &b,
            spec(2, 257, 1.0, Case::Dense),
            13,
            &format!("{s} register panel"),
        )?;
    }
    // The register panel's fold (`Tuning::reg_panel_fold`), and beside the
    // mid-factorization check (the checks stream forced) bitwise equal to
    // the check first.
    let fold = qr_gpu::Tuning {
        reg_panel_fold: true,
        ..qr_gpu::Tuning::default()
    };
    panel_variant(g, &fold, Strategy::Blocked, "register panel fold", 2500)?;
    let aside = (**g)
        .clone()
        .with_strategy(Some(Strategy::Blocked))
        .with_tuning(qr_gpu::Tuning {
            checks_aside_min_l2: 0,
            ..fold.clone()
        });
    let first = aside.clone().with_tuning(qr_gpu::Tuning {
        checks_aside: false,
        ..fold
    });
    let specs = sizes_and_cases(&[65, 96, 97, 200, 512], (3, 300, 0.0), 20);
    same_bits(
        &aside,
        &first,
        &specs,
        2600,
        "register panel fold checks aside",
    )
}

/// Each strategy forced on sizes around its limits, one distribution per
/// size in turn.
fn strategy_sizes(g: &Arc<GpuBackend>, s: Strategy) -> Result<(), Failed> {
    let b = (**g).clone().with_strategy(Some(s));
    for (i, n) in sizes(g, s).into_iter().enumerate() {
        let case = Case::ALL_QR_V2[i % Case::ALL_QR_V2.len()];
        let sp = spec(batch_for(n), n, 2.0, case);
        let a = generate(&sp, 100 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("{s} {sp}"))?;
    }
    Ok(())
}

/// Every distribution on each strategy at a size inside its range.
fn strategy_distributions(g: &Arc<GpuBackend>, s: Strategy, n: usize) -> Result<(), Failed> {
    let b = (**g).clone().with_strategy(Some(s));
    for (i, case) in Case::all().enumerate() {
        let sp = spec(3, n, if i % 2 == 0 { 2.0 } else { 0.0 }, case);
        let a = generate(&sp, 7 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("{s} {sp}"))?;
    }
    Ok(())
}

/// Inputs of 1e-30s and 1e+30s (scaled dense matrices) factor to the bar.
fn strategy_extreme_scales(g: &Arc<GpuBackend>, s: Strategy, n: usize) -> Result<(), Failed> {
    let b = (**g).clone().with_strategy(Some(s));
    let sp = spec(2, n, 1.0, Case::Dense);
    for scale in [1e-30f32, 1e30] {
        let a: Vec<f32> = generate(&sp, 11).iter().map(|x| x * scale).collect();
        gate(&b, sp.shape()?, &a, &format!("{s} {sp} times {scale:e}"))?;
        let ones = vec![scale; sp.batch * n * n];
        gate(&b, sp.shape()?, &ones, &format!("{s} all {scale:e}"))?;
    }
    Ok(())
}

/// Same input twice: bitwise the same outputs.
fn strategy_deterministic(g: &Arc<GpuBackend>, s: Strategy, n: usize) -> Result<(), Failed> {
    let b = (**g).clone().with_strategy(Some(s));
    let sp = spec(2, n, 2.0, Case::Mixed);
    let a = generate(&sp, 5);
    let f1 = geqrf(&b, sp.shape()?, &a)?;
    let f2 = geqrf(&b, sp.shape()?, &a)?;
    if !same_f32_bits(&f1.h, &f2.h) || !same_f32_bits(&f1.tau, &f2.tau) {
        return Err(format!("{s} {sp}: two runs differ").into());
    }
    Ok(())
}

/// |diag R| agrees with qr-cpu's on well-conditioned input.
fn strategy_agrees_with_cpu(g: &Arc<GpuBackend>, s: Strategy, n: usize) -> Result<(), Failed> {
    let b = (**g).clone().with_strategy(Some(s));
    let sp = spec(2, n, 0.0, Case::Dense);
    let shape = sp.shape()?;
    let a = generate(&sp, 3);
    let fg = geqrf(&b, shape, &a)?;
    let fc = geqrf(&CpuBackend::new(), shape, &a)?;
    for m in 0..sp.batch {
        let base = m * n * n;
        let diag = |h: &[f32], i: usize| f64::from(h[base + i * n + i].abs());
        let scale = (0..n).map(|i| diag(&fc.h, i)).fold(0.0, f64::max);
        let worst = (0..n)
            .map(|i| (diag(&fg.h, i) - diag(&fc.h, i)).abs() / scale)
            .fold(0.0, f64::max);
        if worst > 1e-4 {
            return Err(
                format!("{s} {sp} matrix {m}: |diag R| differs from qr-cpu by {worst:e}").into(),
            );
        }
    }
    Ok(())
}

/// A NaN matrix and an infinite matrix are flagged and NaN-filled; the rest
/// of the batch still factors.
fn strategy_non_finite(g: &Arc<GpuBackend>, s: Strategy, n: usize) -> Result<(), Failed> {
    let b = (**g).clone().with_strategy(Some(s));
    let sp = spec(4, n, 1.0, Case::Dense);
    let shape = sp.shape()?;
    let mut a = generate(&sp, 9);
    a[n * n + n / 2] = f32::NAN;
    a[3 * n * n + n * n - 1] = f32::INFINITY;
    let f = geqrf(&b, shape, &a)?;
    let want = [Info::OK, Info::NON_FINITE, Info::OK, Info::NON_FINITE];
    if f.info != want {
        return Err(format!("{s}: info {:?}, want {want:?}", f.info).into());
    }
    for m in [1, 3] {
        let h = &f.h[m * n * n..(m + 1) * n * n];
        let t = &f.tau[m * n..(m + 1) * n];
        if !h.iter().chain(t).all(|x| x.is_nan()) {
            return Err(format!("{s}: flagged matrix {m} is not NaN-filled").into());
        }
    }
    let one = Shape::new(1, n)?;
    for m in [0, 2] {
        let am = &a[m * n * n..(m + 1) * n * n];
        let report = qr_verify::check(
            one,
            am,
            &f.h[m * n * n..(m + 1) * n * n],
            &f.tau[m * n..(m + 1) * n],
        )?;
        if !report.meets_bar() {
            return Err(
                format!("{s}: finite matrix {m} beside non-finite ones fails the bar").into(),
            );
        }
    }
    Ok(())
}

/// Exactly-zero trailing columns, a different number in every matrix (none,
/// a panel's worth and a half, all but one, all): every matrix meets the bar
/// and its zero columns factor to tau = 0 with zero R columns, as without the
/// device's zero-column skip; a zero column between non-zero ones changes
/// nothing either.
fn strategy_zero_columns(g: &Arc<GpuBackend>, s: Strategy, n: usize) -> Result<(), Failed> {
    let b = (**g).clone().with_strategy(Some(s));
    zero_columns_on(&b, &s.to_string(), n)
}

/// `strategy_zero_columns` on backend `b` (its plan's label `s`).
fn zero_columns_on(b: &GpuBackend, s: &str, n: usize) -> Result<(), Failed> {
    let sp = spec(5, n, 1.0, Case::Dense);
    let shape = sp.shape()?;
    let mut a = generate(&sp, 13);
    let zero_from = [n, n - 48.min(n - 1), 1, 0, n / 2];
    for (m, &z) in zero_from.iter().enumerate() {
        for r in 0..n {
            for c in z..n {
                a[m * n * n + r * n + c] = 0.0;
            }
        }
    }
    // Matrix 4 also gets an interior zero column left of its zero block.
    for r in 0..n {
        a[4 * n * n + r * n + n / 4] = 0.0;
    }
    let f = geqrf(b, shape, &a)?;
    if !f.all_ok() {
        return Err(format!("{s} zero columns: info {:?}", f.info).into());
    }
    let one = Shape::new(1, n)?;
    for (m, &z) in zero_from.iter().enumerate() {
        let (h, t) = (&f.h[m * n * n..(m + 1) * n * n], &f.tau[m * n..(m + 1) * n]);
        let report = qr_verify::check(one, &a[m * n * n..(m + 1) * n * n], h, t)?;
        if !report.meets_bar() {
            return Err(format!("{s} zero columns from {z}: matrix {m} fails the bar").into());
        }
        let bad_tau = (z..n).any(|c| t[c] != 0.0);
        let bad_h = (0..n).any(|r| (z..n).any(|c| h[r * n + c] != 0.0));
        if bad_tau || bad_h {
            return Err(format!(
                "{s} zero columns from {z}: matrix {m} has non-zero tau or R there"
            )
            .into());
        }
    }
    Ok(())
}

fn forced_out_of_range_is_an_error(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let n = qr_gpu::smem_fit_n(g.device()) + 1;
    let b = (**g).clone().with_strategy(Some(Strategy::Smem));
    let shape = Shape::new(1, n)?;
    match geqrf(&b, shape, &vec![1.0; n * n]) {
        Err(qr_core::QrError::Unsupported { .. }) => Ok(()),
        other => Err(format!("smem at n = {n}: {other:?}").into()),
    }
}

fn chosen_plans_pass_the_test_set(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for sp in qr_verify::test_set() {
        let capped = spec(sp.batch.min(4), sp.n, sp.cond, sp.case);
        let a = generate(&capped, 1);
        gate(
            &**g,
            capped.shape()?,
            &a,
            &format!("{} ({})", sp, g.plan(capped.shape()?)?),
        )?;
    }
    Ok(())
}

fn modules_are_cached(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let sp = spec(2, 48, 1.0, Case::Dense);
    let a = generate(&sp, 2);
    geqrf(&**g, sp.shape()?, &a)?;
    let before = g.modules_compiled();
    geqrf(&**g, sp.shape()?, &a)?;
    if g.modules_compiled() != before {
        return Err("a second identical call compiled again".into());
    }
    Ok(())
}

/// Kernels compiled ahead (`Backend::prepare`) serve the calls after it:
/// the factorizations pass the gate, and a refused shape is an error.
fn prepared_shapes_factor(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let specs = [
        spec(3, 300, 1.0, Case::Dense),
        spec(2, 48, 1.0, Case::Dense),
    ];
    let shapes = specs
        .iter()
        .map(Spec::shape)
        .collect::<Result<Vec<_>, _>>()?;
    g.prepare(&shapes)?;
    for (i, sp) in specs.iter().enumerate() {
        gate(&**g, shapes[i], &generate(sp, 9), &format!("prepared {sp}"))?;
    }
    let smem_only = (**g).clone().with_strategy(Some(Strategy::Smem));
    if smem_only.prepare(&[Shape::new(1, 4096)?]).is_ok() {
        return Err("preparing a shape its forced strategy refuses succeeded".into());
    }
    Ok(())
}

fn device_bench_times_something(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let sp = spec(4, 64, 1.0, Case::Dense);
    let a = generate(&sp, 4);
    let opts = qr_core::BenchOptions {
        min_reps: 3,
        max_reps: 5,
        ..Default::default()
    };
    let t = g.bench(sp.shape()?, &[&a, &a], &opts)?;
    if t.clock != "cuda-events" || t.reps < 3 || t.mean.is_zero() {
        return Err(format!("implausible timing {t:?}").into());
    }
    Ok(())
}

fn device_api_round_trip(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let sp = spec(3, 300, 1.0, Case::Dense);
    let shape = sp.shape()?;
    let a = generate(&sp, 6);
    let da = g.upload(&a)?;
    let mut out = g.alloc_outputs(shape)?;
    g.geqrf_device(&da, &mut out)?;
    let mut f = qr_core::Factorization::zeroed(shape)?;
    g.download(&out, f.as_batch_mut()?)?;
    let host = geqrf(&**g, shape, &a)?;
    if !same_outputs(&f, &host) {
        return Err("device API and host API disagree".into());
    }
    Ok(())
}

fn peer_cusolver(_g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let p = CusolverBackend::new(0)?;
    for n in [1, 33, 200, 513] {
        let sp = spec(2, n, 2.0, Case::Dense);
        gate(
            &p,
            sp.shape()?,
            &generate(&sp, 8),
            &format!("cusolver {sp}"),
        )?;
    }
    Ok(())
}

fn peer_cublas_batched(_g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let p = CublasBatchedBackend::new(0)?;
    for n in [1, 33, 100] {
        let sp = spec(3, n, 2.0, Case::Dense);
        gate(
            &p,
            sp.shape()?,
            &generate(&sp, 8),
            &format!("cublas-batched {sp}"),
        )?;
    }
    Ok(())
}

fn trials() -> Vec<(String, BoxedTest)> {
    let mut t: Vec<(String, BoxedTest)> = Vec::new();
    for (s, mid) in [
        (Strategy::Smem, 120),
        (Strategy::Blocked, 513),
        (Strategy::Cluster, 1000),
        (Strategy::Large, 1000),
    ] {
        t.push((
            format!("{s}_sizes"),
            Box::new(move |g| strategy_sizes(g, s)),
        ));
        t.push((
            format!("{s}_distributions"),
            Box::new(move |g| strategy_distributions(g, s, mid)),
        ));
        t.push((
            format!("{s}_extreme_scales"),
            Box::new(move |g| strategy_extreme_scales(g, s, mid)),
        ));
        t.push((
            format!("{s}_deterministic"),
            Box::new(move |g| strategy_deterministic(g, s, mid)),
        ));
        t.push((
            format!("{s}_agrees_with_cpu"),
            Box::new(move |g| strategy_agrees_with_cpu(g, s, mid)),
        ));
        t.push((
            format!("{s}_non_finite"),
            Box::new(move |g| strategy_non_finite(g, s, mid)),
        ));
        t.push((
            format!("{s}_zero_columns"),
            Box::new(move |g| strategy_zero_columns(g, s, mid)),
        ));
    }
    let plain: [(&str, Test); 34] = [
        ("sgemm_trailing", sgemm_trailing),
        // The newest kernels first: a call that runs out of time still
        // says whether they pass.
        ("smem_warp", smem_warp),
        ("corner", corner),
        ("smem_shared_kernels", smem_shared_kernels),
        ("smem_registers", smem_registers),
        (
            "forced_out_of_range_is_an_error",
            forced_out_of_range_is_an_error,
        ),
        (
            "chosen_plans_pass_the_test_set",
            chosen_plans_pass_the_test_set,
        ),
        ("modules_are_cached", modules_are_cached),
        ("prepared_shapes_factor", prepared_shapes_factor),
        ("register_panel", register_panel),
        ("cluster_push_meet", cluster_push_meet),
        ("register_cluster_meetings", register_cluster_meetings),
        ("tensor_row_split", tensor_row_split),
        ("batch_lanes", batch_lanes),
        ("fused_checks", fused_checks),
        ("tensor_lo_rounded", tensor_lo_rounded),
        ("tensor_l2_hints", tensor_l2_hints),
        ("register_panel_halves", register_panel_halves),
        ("tensor_warps_4", tensor_warps_4),
        ("tensor_stage", tensor_stage),
        ("two_level", two_level),
        ("panel_row_pairs", panel_row_pairs),
        ("panel_quad", panel_quad),
        ("panel_barriers", panel_barriers),
        ("look_ahead", look_ahead),
        ("checks_aside", checks_aside),
        ("graphs", graphs),
        ("graphs_beside_checks", graphs_beside_checks),
        ("graphs_beside_another_thread", graphs_beside_another_thread),
        ("panel_fold", panel_fold),
        ("device_bench_times_something", device_bench_times_something),
        ("device_api_round_trip", device_api_round_trip),
        ("peer_cusolver", peer_cusolver),
        ("peer_cublas_batched", peer_cublas_batched),
    ];
    for (name, f) in q_ops::TRIALS
        .into_iter()
        .chain(plain)
        .chain(failure_paths::TRIALS)
    {
        t.push((name.to_string(), Box::new(f)));
    }
    t.extend(behaviour::trials());
    t
}

fn main() {
    let mut args = Arguments::from_args();
    // The GPU is one device: run its tests one at a time.
    args.test_threads = Some(1);
    let require = std::env::var("QR_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let device = qr_gpu::probe().and_then(|_| GpuBackend::new(0));
    let list = trials();
    let trials: Vec<Trial> = match device {
        Ok(g) => {
            println!("GPU tests on {}", g.describe());
            let g = Arc::new(g);
            list.into_iter()
                .map(|(name, f)| {
                    let g = g.clone();
                    Trial::test(name, move || f(&g))
                })
                .collect()
        }
        Err(e) if require => {
            println!("QR_REQUIRE_GPU=1 but no usable GPU: {e}");
            vec![Trial::test("gpu_required", move || {
                Err(format!("{e}").into())
            })]
        }
        Err(e) => {
            println!("no usable GPU, GPU tests ignored: {e}");
            list.into_iter()
                .map(|(name, _)| Trial::test(name, || Ok(())).with_ignored_flag(true))
                .collect()
        }
    };
    libtest_mimic::run(&args, trials).exit();
}
