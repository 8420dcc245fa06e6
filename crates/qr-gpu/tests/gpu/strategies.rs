//! Each strategy forced on sizes around its limits, on every
//! distribution, on extreme scales, twice for the same bits, against
//! qr-cpu, with non-finite matrices and with zero columns; a forced
//! strategy out of its range, and the planner's own choices on the test set.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{Info, Shape, geqrf};
use qr_cpu::CpuBackend;
use qr_gpu::{GpuBackend, Strategy};
use qr_verify::{Case, generate};

use super::BoxedTest;
use super::common::{batch_for, gate, same_f32_bits, sizes, spec};

/// The per-strategy trials, named `<strategy>_<test>`: each strategy's
/// seven in turn, those after `sizes` at an order inside its range.
pub(crate) fn trials() -> Vec<(String, BoxedTest)> {
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
    t
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
pub(crate) fn zero_columns_on(b: &GpuBackend, s: &str, n: usize) -> Result<(), Failed> {
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

pub(crate) fn forced_out_of_range_is_an_error(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let n = qr_gpu::smem_fit_n(g.device()) + 1;
    let b = (**g).clone().with_strategy(Some(Strategy::Smem));
    let shape = Shape::new(1, n)?;
    match geqrf(&b, shape, &vec![1.0; n * n]) {
        Err(qr_core::QrError::Unsupported { .. }) => Ok(()),
        other => Err(format!("smem at n = {n}: {other:?}").into()),
    }
}

pub(crate) fn chosen_plans_pass_the_test_set(g: &Arc<GpuBackend>) -> Result<(), Failed> {
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
