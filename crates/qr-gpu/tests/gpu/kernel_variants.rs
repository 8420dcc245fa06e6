//! Kernel variants whose tests check more than the table in `variants.rs`
//! does: the planner's choice, overflow flagged as by the default kernel,
//! zero columns, several tunings against each other, and the variants'
//! own edge sizes.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{Info, Shape, geqrf};
use qr_gpu::{GpuBackend, Panel, PlanEdit, Route, Strategy, Update};
use qr_verify::{Case, generate};

use super::common::{
    batch_for, extreme_scales_twice, gate, gate_orders, gated_same, panel_variant, same_bits,
    same_f32_bits, sizes_and_cases, spec, tiny_twice,
};
use super::strategies::zero_columns_on;

/// The register-resident panel kernel (2 rows per thread by default) on
/// the blocked and cluster paths: sizes around its
/// block limits, every distribution, inputs of 1e-30s, and two runs
/// bitwise identical.
pub(crate) fn register_panel(g: &Arc<GpuBackend>) -> Result<(), Failed> {
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
    Ok(())
}

/// The register panel by halves (what `blocked` plans of one row per
/// thread take): the tall panels of a block alone at one row per thread (n
/// from 320 to 512), every distribution, inputs of 1e-30s, and two runs
/// bitwise identical.
pub(crate) fn register_panel_halves(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let b = blocked(g, qr_gpu::Tuning::default());
    let plan = b.plan(Shape::new(40, 352)?)?;
    let halves = matches!(
        plan.blocked().map(|b| b.panel),
        Some(Panel::Registers { halves: true, .. })
    );
    if !halves {
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
    tiny_twice(&b, spec(2, 400, 1.0, Case::Dense), 3400, "halves")
}

/// The warp kernel (`Tuning::smem_warp_min_batch_per_sm`, here for every
/// batch): orders 1 to 32 on every distribution, the planner's choice for them, inputs of
/// 1e-30s and 1e+30s with a zero column and two runs bitwise identical,
/// NaN and overflowing matrices beside finite ones, zero columns.
pub(crate) fn smem_warp(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        smem_warp_min_batch_per_sm: Some(0),
        ..qr_gpu::Tuning::default()
    };
    let b = (**g).clone().with_tuning(tuning);
    for n in [1, 2, 3, 5, 16, 17, 31, 32] {
        let p = b.plan(Shape::new(20, n)?)?;
        if !matches!(p.route, Route::Small(g) if g.warp) {
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

/// The tensor-core update with 4-warp blocks (`Tuning::tensor_warps4_min_waves` 0;
/// the default picks them only for batches of many waves) on every panel
/// strategy: sizes around its row and column steps, every distribution,
/// and two runs bitwise identical.
pub(crate) fn tensor_warps_4(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let tuning = qr_gpu::Tuning {
        tensor_warps4_min_waves: 0,
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
        gated_same(
            &b,
            &b,
            sp.shape()?,
            &generate(&sp, 17),
            &format!("{label} {sp}"),
        )?;
    }
    Ok(())
}

/// The tensor-core update with each tile's rows split over a cluster
/// (`Tuning::tensor_row_split`): with 16 rows per block at least (a plan
/// edit), so that small orders split too (chunks of one row and empty ones
/// included), on both strategies, see `panel_variant`; then the default
/// split against none on few-matrix orders, each gated and run twice for
/// the same bits.
pub(crate) fn tensor_row_split(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let small = (**g)
        .clone()
        .with_plan_edit(Some(PlanEdit::tensor("16 rows a row-split block", |u| {
            u.row_split_min_rows = 16
        })));
    let t = qr_gpu::Tuning::default();
    for s in [Strategy::Blocked, Strategy::Cluster] {
        panel_variant(&small, &t, s, &format!("{s} tensor row split"), 3300)?;
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
        gate(&off, sp.shape()?, &a, &format!("no tensor row split {sp}"))?;
        gated_same(&on, &on, sp.shape()?, &a, &format!("tensor row split {sp}"))?;
    }
    Ok(())
}

/// L2 eviction priorities in the tensor-core update
/// (`Tuning::tensor_l2_hints`, 1 and 2, here for batches of any size):
/// bitwise equal to the plain kernel (`switch_keeps_bits`), as a cache
/// policy changes no value.
pub(crate) fn tensor_l2_hints(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for hints in [1, 2] {
        // Below two L2s of input the planner takes none: an edit forces them.
        let on = (**g).clone().with_plan_edit(Some(PlanEdit::tensor(
            "l2 hints on a small batch",
            move |u| u.l2_hints = hints,
        )));
        let plan = on.plan(Shape::new(3, 512)?)?;
        let planned = match plan.blocked().map(|b| b.update) {
            Some(Update::Tensor(t)) => t.l2_hints,
            _ => 0,
        };
        if planned != hints {
            return Err(format!("l2 hints {hints} not planned for a small batch: {plan}").into());
        }
        let orders: &[usize] = &[33, 64, 97, 333, 512, 1000];
        let label = format!("l2 hints {hints}");
        switch_keeps_bits(&on, g, (orders, (3, 400, 0.0)), 3200, &label)?;
    }
    Ok(())
}

/// The writers' overflow checks (`Schedule::fused_checks`: the register
/// panel on the tensor-core update): on the blocked and cluster
/// strategies, planned, the gate on sizes around the panel and tile edges
/// and every distribution, and inputs whose R overflows (in a panel, and
/// in the R rows an update writes) flagged `OVERFLOW` with the same info
/// as the shared-memory panel's plan, which checks in separate passes,
/// their neighbours untouched.
pub(crate) fn fused_checks(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let separate = qr_gpu::Tuning {
        reg_panel_rows_per_thread: 0,
        ..qr_gpu::Tuning::default()
    };
    let orders: &[usize] = &[33, 64, 97, 333, 512, 1000];
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let on = (**g).clone().with_strategy(Some(s));
        let plan = on.plan(Shape::new(3, 400)?)?;
        let fused = |p: &qr_gpu::Plan| p.blocked().is_some_and(|b| b.schedule.fused_checks);
        if !fused(&plan) {
            return Err(format!("{s}: no fused checks planned: {plan}").into());
        }
        let sep = on.clone().with_tuning(separate.clone());
        if fused(&sep.plan(Shape::new(3, 400)?)?) {
            return Err(format!("{s}: the shared-memory panel's plan fuses its checks").into());
        }
        let label = format!("{s} fused checks");
        gate_orders(&on, orders, 0, 2800, &label)?;
        overflow_flagged_alike(&on, &sep, &[333, 513], &label, false)?;
    }
    Ok(())
}

/// The GPU backend of `g`'s device with `tuning`, the blocked strategy forced.
fn blocked(g: &Arc<GpuBackend>, tuning: qr_gpu::Tuning) -> GpuBackend {
    (**g)
        .clone()
        .with_tuning(tuning)
        .with_strategy(Some(Strategy::Blocked))
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

/// `on` against `plain` on the blocked and cluster strategies, on the
/// orders `ns` (around the panel and tile edges; the tensor-core update's
/// switches act only on its staged orders, divisible by 4) and every
/// distribution at `cases`: the bits must be `plain`'s.
fn switch_keeps_bits(
    on: &GpuBackend,
    plain: &GpuBackend,
    (ns, cases): (&[usize], (usize, usize, f64)),
    seed: u64,
    label: &str,
) -> Result<(), Failed> {
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let plain = plain.clone().with_strategy(Some(s));
        let on = on.clone().with_strategy(Some(s));
        let specs = sizes_and_cases(ns, cases, 20);
        same_bits(&on, &plain, &specs, seed, &format!("{s} {label}"))?;
    }
    Ok(())
}
