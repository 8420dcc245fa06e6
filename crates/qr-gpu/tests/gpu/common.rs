//! Helpers the GPU test files share: specs, the project's gate, sizes
//! around each strategy's limits, bitwise comparisons, and the checks that
//! several kernel variants go through (`panel_variant`, scaled inputs run
//! twice).

use libtest_mimic::Failed;
use qr_core::{Backend, Shape, geqrf};
use qr_gpu::{GpuBackend, Strategy};
use qr_verify::{Case, Spec, generate};

pub(crate) fn spec(batch: usize, n: usize, cond: f64, case: Case) -> Spec {
    Spec {
        batch,
        n,
        cond,
        case,
    }
}

/// Factors `a` with `backend` and checks the project's bar on every matrix.
pub(crate) fn gate(
    backend: &dyn Backend,
    shape: Shape,
    a: &[f32],
    what: &str,
) -> Result<(), Failed> {
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

pub(crate) fn batch_for(n: usize) -> usize {
    match n {
        0..=256 => 3,
        257..=1024 => 2,
        _ => 1,
    }
}

/// Sizes around each strategy's limits.
pub(crate) fn sizes(g: &GpuBackend, s: Strategy) -> Vec<usize> {
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
pub(crate) fn gate_orders(
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

/// Specs at orders `ns` (condition 2, cycling through the qr_v2 cases),
/// then every case at `(batch, n, cond)`; each with its input's seed offset
/// (`cases_from` on for the second group).
pub(crate) fn sizes_and_cases(
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
pub(crate) fn same_bits(
    variant: &GpuBackend,
    reference: &GpuBackend,
    specs: &[(Spec, usize)],
    seed: u64,
    label: &str,
) -> Result<(), Failed> {
    for (sp, i) in specs {
        let a = generate(sp, seed + *i as u64);
        gated_same(
            variant,
            reference,
            sp.shape()?,
            &a,
            &format!("{label} {sp}"),
        )?;
    }
    Ok(())
}

/// `a` passes the gate on `variant`, whose H, tau and info are then
/// bitwise `reference`'s (the same backend: two runs agree).
pub(crate) fn gated_same(
    variant: &GpuBackend,
    reference: &GpuBackend,
    shape: Shape,
    a: &[f32],
    label: &str,
) -> Result<(), Failed> {
    gate(variant, shape, a, label)?;
    let one = geqrf(variant, shape, a)?;
    let two = geqrf(reference, shape, a)?;
    if !same_outputs(&one, &two) {
        return Err(format!("{label}: the bits differ between the runs").into());
    }
    Ok(())
}

/// Bit-for-bit equality of two float slices (NaNs included).
pub(crate) fn same_f32_bits(x: &[f32], y: &[f32]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// Two factorizations with the same H and tau bit for bit (a float
/// comparison would let -0 pass for +0) and the same info.
pub(crate) fn same_outputs(x: &qr_core::Factorization, y: &qr_core::Factorization) -> bool {
    same_f32_bits(&x.h, &y.h) && same_f32_bits(&x.tau, &y.tau) && x.info == y.info
}

/// A panel-kernel variant on strategy `s`: sizes around the 16-column
/// switch, the row groups and block limits, every distribution, inputs of
/// 1e-30s, and two runs bitwise identical.
pub(crate) fn panel_variant(
    g: &GpuBackend,
    tuning: &qr_gpu::Tuning,
    s: Strategy,
    label: &str,
    seed: u64,
) -> Result<(), Failed> {
    let b = g.clone().with_tuning(tuning.clone()).with_strategy(Some(s));
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
pub(crate) fn tiny_twice(b: &GpuBackend, sp: Spec, seed: u64, label: &str) -> Result<(), Failed> {
    let tiny: Vec<f32> = generate(&sp, seed).iter().map(|x| x * 1e-30).collect();
    gated_same(
        b,
        b,
        sp.shape()?,
        &tiny,
        &format!("{label} {sp} times 1e-30"),
    )
}

/// `sp`'s input (seeded `seed`) times 1e-30 and times 1e+30, with column
/// `zero` zeroed, passes the gate on `b`, and two runs give the same bits.
pub(crate) fn extreme_scales_twice(
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
