//! GPU tests of `orgqr`, `ormqr` and `qr`: the float64 gates of qr-verify
//! on every distribution and on orders around the 32-column blocks, `qr`
//! bit for bit `geqrf` then `orgqr`, the device API against the host one,
//! per-matrix `info` with NaN reflectors or C, and the same bits twice.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{ApplyQ, Info, Reflectors, Shape, geqrf, orgqr, ormqr, qr};
use qr_gpu::GpuBackend;
use qr_verify::q_gate::{Applied, QrOutputs};
use qr_verify::{Case, check_orgqr, check_ormqr, check_qr, generate};

use super::Test;
use super::common::{batch_for, spec};

/// The Q tests, by name.
pub(crate) const TRIALS: [(&str, Test); 6] = [
    ("q_orgqr_orders", q_orgqr_orders),
    ("q_per_block", q_per_block),
    ("q_ormqr_products", q_ormqr_products),
    ("q_qr_is_geqrf_then_orgqr", q_qr_is_geqrf_then_orgqr),
    ("q_non_finite", q_non_finite),
    ("q_deterministic", q_deterministic),
];

/// A factored batch: the input, its shape and the GPU's `(H, tau, info)`.
fn factored(g: &GpuBackend, batch: usize, n: usize, case: Case, seed: u64) -> Factored {
    let sp = spec(batch, n, 2.0, case);
    let shape = sp.shape().expect("valid shape");
    let a = generate(&sp, seed);
    let f = geqrf(g, shape, &a).expect("geqrf");
    Factored { shape, a, f }
}

struct Factored {
    shape: Shape,
    a: Vec<f32>,
    f: qr_core::Factorization,
}

impl Factored {
    fn reflectors(&self) -> Reflectors<'_> {
        Reflectors::new(self.shape, &self.f.h, &self.f.tau).expect("lengths")
    }
}

/// Orders below, at and past the 32-column blocks, the whole-matrix
/// kernel's range and the benchmark orders, every distribution in turn;
/// on a device of 227 KiB a block, 2048 and 3000 hold their tiles in
/// clusters of 2 and 4 blocks.
fn q_orgqr_orders(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let orders = [
        1, 2, 5, 31, 32, 33, 65, 100, 176, 240, 352, 513, 1000, 2048, 3000,
    ];
    for (i, &n) in orders.iter().enumerate() {
        let case = Case::ALL_QR_V2[i % Case::ALL_QR_V2.len()];
        let x = factored(g, batch_for(n), n, case, 40 + i as u64);
        let q = orgqr(g.as_ref(), x.shape, &x.f.h, &x.f.tau)?;
        let report = check_orgqr(x.reflectors(), &q.data, &q.info)?;
        if !report.meets_bar() {
            return Err(format!("orgqr {case} n {n}: {report:?}").into());
        }
    }
    Ok(())
}

/// All four products, `k` narrower than and equal to `n`, off the 16-byte
/// vectors too; the tile on chip up to n = 176, one update per block from
/// n = 513 on (`Tuning::q_ormqr_on_chip_max_n`).
fn q_ormqr_products(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let orders = [
        (5, 3),
        (33, 1),
        (100, 7),
        (176, 176),
        (513, 36),
        (1000, 33),
        (1500, 40),
    ];
    for (i, &(n, k)) in orders.iter().enumerate() {
        let case = Case::ALL_QR_V2[(i + 3) % Case::ALL_QR_V2.len()];
        let x = factored(g, batch_for(n), n, case, 60 + i as u64);
        // k <= n: a prefix of one more dense batch of the same shape.
        let c = generate(&spec(x.shape.batch(), n, 1.0, Case::Dense), 7)
            [..ApplyQ::c_len(x.shape, k)?]
            .to_vec();
        let report = ormqr_all(g.as_ref(), &x, k, &c)?;
        if !report.meets_bar() {
            return Err(format!("ormqr {case} n {n} k {k}: {report:?}").into());
        }
    }
    Ok(())
}

/// The four ormqr products of `c` (`k` columns or rows) by `x`'s
/// reflectors on `g`, against the float64 gate.
fn ormqr_all(
    g: &GpuBackend,
    x: &Factored,
    k: usize,
    c: &[f32],
) -> Result<qr_verify::q_gate::OpReport, Failed> {
    let outs = ApplyQ::ALL
        .iter()
        .map(|&op| ormqr(g, x.shape, &x.f.h, &x.f.tau, op, k, c))
        .collect::<Result<Vec<_>, _>>()?;
    let applied: Vec<Applied<'_>> = ApplyQ::ALL
        .iter()
        .zip(&outs)
        .map(|(&op, m)| Applied {
            op,
            out: &m.data,
            info: &m.info,
        })
        .collect();
    Ok(check_ormqr(x.reflectors(), k, c, &applied)?)
}

/// The blocks applied one tensor-core update per block over the whole
/// result (`Tuning::q_max_cluster` 0, what orders past the tile's limit
/// take): orgqr and the four ormqr products at the gates, the plan saying
/// so.
fn q_per_block(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let per_block = (**g).clone().with_tuning(qr_gpu::Tuning {
        q_max_cluster: 0,
        ..qr_gpu::Tuning::default()
    });
    for (i, &(n, k)) in [(33, 5), (100, 7), (513, 36), (1000, 1000)]
        .iter()
        .enumerate()
    {
        let case = Case::ALL_QR_V2[(i + 1) % Case::ALL_QR_V2.len()];
        let x = factored(g, batch_for(n), n, case, 80 + i as u64);
        let said = per_block.describe_op(x.shape, qr_core::Operation::Orgqr)?;
        if !said.contains("one tensor-core update per block") {
            return Err(format!("q_max_cluster 0 planned otherwise: {said}").into());
        }
        let q = orgqr(&per_block, x.shape, &x.f.h, &x.f.tau)?;
        let report = check_orgqr(x.reflectors(), &q.data, &q.info)?;
        if !report.meets_bar() {
            return Err(format!("per-block orgqr {case} n {n}: {report:?}").into());
        }
        let c = generate(&spec(x.shape.batch(), n, 1.0, Case::Dense), 9)
            [..ApplyQ::c_len(x.shape, k)?]
            .to_vec();
        let report = ormqr_all(&per_block, &x, k, &c)?;
        if !report.meets_bar() {
            return Err(format!("per-block ormqr {case} n {n} k {k}: {report:?}").into());
        }
    }
    Ok(())
}

/// `qr` (one round trip) against `geqrf_into` then `orgqr_into`, and the
/// device API's `qr_device` against both.
fn q_qr_is_geqrf_then_orgqr(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for (i, &n) in [3, 32, 120, 513, 1024].iter().enumerate() {
        let case = Case::ALL_QR_V2[(i + 5) % Case::ALL_QR_V2.len()];
        let x = factored(g, batch_for(n), n, case, 80 + i as u64);
        let q1 = orgqr(g.as_ref(), x.shape, &x.f.h, &x.f.tau)?;
        let both = qr(g.as_ref(), x.shape, &x.a)?;
        let outs = QrOutputs {
            q: &both.q,
            r: &both.r,
            info: &both.info,
        };
        let report = check_qr(&x.a, x.reflectors(), &x.f.info, &q1.data, outs)?;
        if !report.meets_bar() {
            return Err(format!("qr {case} n {n}: {report:?}").into());
        }
        let a = g.upload(&x.a)?;
        let mut f = g.alloc_outputs(x.shape)?;
        let mut dq = g.upload(&vec![0.0; x.shape.a_len()])?;
        let mut dr = g.upload(&vec![0.0; x.shape.a_len()])?;
        g.qr_device(&a, &mut f, &mut dq, &mut dr)?;
        let mut q = vec![0.0f32; x.shape.a_len()];
        let mut r = vec![0.0f32; x.shape.a_len()];
        g.stream().memcpy_dtoh(&dq, &mut q)?;
        g.stream().memcpy_dtoh(&dr, &mut r)?;
        g.stream().synchronize()?;
        if qr_verify::q_gate::differing(&q, &both.q) + qr_verify::q_gate::differing(&r, &both.r)
            != 0
        {
            return Err(format!("qr_device differs from qr_into at n {n}").into());
        }
    }
    Ok(())
}

/// NaN in one matrix's reflectors: info 1 and NaN for it, the others'
/// bits unchanged; a NaN in C stays in its product with info 0.
fn q_non_finite(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for n in [5, 100, 513] {
        let x = factored(g, 3, n, Case::Dense, 90);
        let clean = orgqr(g.as_ref(), x.shape, &x.f.h, &x.f.tau)?;
        let mut h = x.f.h.clone();
        h[n * n + (n - 1) * n] = f32::NAN; // matrix 1, row n - 1, column 0
        let dirty = orgqr(g.as_ref(), x.shape, &h, &x.f.tau)?;
        let want = [Info::OK, Info::NON_FINITE, Info::OK];
        if dirty.info != want || !dirty.data[n * n..2 * n * n].iter().all(|v| v.is_nan()) {
            return Err(format!("orgqr n {n}: info {:?} or no NaN fill", dirty.info).into());
        }
        for m in [0, 2] {
            let r = m * n * n..(m + 1) * n * n;
            if qr_verify::q_gate::differing(&clean.data[r.clone()], &dirty.data[r]) != 0 {
                return Err(format!("orgqr n {n}: matrix {m} changed beside a NaN").into());
            }
        }
        let mut c = vec![1.0f32; 3 * n * 4];
        c[2 * n * 4] = f32::NAN;
        let out = ormqr(g.as_ref(), x.shape, &h, &x.f.tau, ApplyQ::QT_LEFT, 4, &c)?;
        if out.info != want || !out.data[2 * n * 4..].iter().any(|v| v.is_nan()) {
            return Err(format!("ormqr n {n}: info {:?}", out.info).into());
        }
        // k = 0: nothing computed, the reflectors still judged.
        let empty = ormqr(g.as_ref(), x.shape, &h, &x.f.tau, ApplyQ::QT_LEFT, 0, &[])?;
        if empty.info != want {
            return Err(format!("ormqr n {n} k 0: info {:?}", empty.info).into());
        }
    }
    Ok(())
}

/// Two calls give the same bits (orgqr and every product).
fn q_deterministic(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for n in [64, 640] {
        let x = factored(g, 2, n, Case::Mixed, 95);
        let q1 = orgqr(g.as_ref(), x.shape, &x.f.h, &x.f.tau)?;
        let q2 = orgqr(g.as_ref(), x.shape, &x.f.h, &x.f.tau)?;
        let mut same = q1 == q2;
        for op in ApplyQ::ALL {
            let c1 = ormqr(g.as_ref(), x.shape, &x.f.h, &x.f.tau, op, n, &x.a)?;
            let c2 = ormqr(g.as_ref(), x.shape, &x.f.h, &x.f.tau, op, n, &x.a)?;
            same &= c1 == c2;
        }
        if !same {
            return Err(format!("Q operations at n {n} differ between two runs").into());
        }
    }
    Ok(())
}
