//! The `f64` gates of the `Q` operations, per matrix, as qr-core's crate
//! documentation states them (`eps = 2^-23`, `||.||_1` the largest absolute
//! column sum):
//!
//! - `orgqr`: `qerr = ||Q - Q64||_1 / (n eps)` and
//!   `orth = ||Q^T Q - I||_1 / (n eps)` of the returned `Q`;
//! - `ormqr`: `||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)` for each
//!   [`ApplyQ`] applied;
//! - `qr`: `recon = ||A - Q R||_1 / (n eps ||A||_1)`, `orth` and `qerr` of
//!   its `Q`, and `split`: how many entries of `Q`, `R` and `info` differ,
//!   bit for bit, from `geqrf` followed by `orgqr` (with `R = triu(H)`).
//!
//! `Q64` is this crate's own [`householder_product`](crate::householder) of
//! the reflectors the operation was given (for `qr`, those of the backend's
//! own `geqrf`), so each gate measures the operation alone, not the
//! factorization before it. Every product is a faer `f64` product of the
//! widened `f32` outputs. A NaN or an infinity in a result that should be
//! finite makes its value NaN or infinite, which fails (MAGMA's habit).
//!
//! A matrix whose `info` is not OK is not measured: it is listed with its
//! code and no values, and it neither passes the gate nor meets the bar,
//! since the suites' inputs are finite. A caller that plants a NaN on
//! purpose reads [`OpMatrixGate::info`] instead.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatRef, Par};
use qr_core::{
    ApplyQ, EPS_F32, Info, Operation, QrError, Reflectors, Shape, Side, Transpose, upper_triangle,
};
use rayon::prelude::*;

use crate::gate::{
    GateReport, ORTH_BAR, ORTH_GATE, SFR_BAR, SFR_GATE, nan_max, one_norm, one_norm_where, scaled,
    symmetric_one_norm,
};
use crate::householder::q_from_reflectors;

/// One quantity a gate measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// `geqrf`'s scaled factor residual `||R - Q^T A||_1 / (n eps ||A||_1)`.
    Sfr,
    /// `||Q^T Q - I||_1 / (n eps)`: of `Q64` for `geqrf`, of the returned
    /// `Q` for `orgqr` and `qr`.
    Orth,
    /// `||Q - Q64||_1 / (n eps)`.
    Qerr,
    /// `||A - Q R||_1 / (n eps ||A||_1)` of `qr`'s outputs.
    Recon,
    /// `||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)` (left) or the same
    /// with `C op(Q)` (right).
    Apply(ApplyQ),
    /// Entries of `qr`'s `Q`, `R` and `info` that are not bit for bit those
    /// of `geqrf` then `orgqr` (NaN matches NaN whatever its payload).
    Split,
}

impl Metric {
    /// What the gate of `op` measures, in the order of
    /// [`OpMatrixGate::values`]. `ormqr` is gated for all four
    /// [`ApplyQ`], whichever one `op` names.
    pub fn of(op: Operation) -> Vec<Metric> {
        match op {
            Operation::Geqrf => vec![Metric::Sfr, Metric::Orth],
            Operation::Orgqr => vec![Metric::Qerr, Metric::Orth],
            Operation::Ormqr(_) => ApplyQ::ALL.iter().map(|&a| Metric::Apply(a)).collect(),
            Operation::Qr => vec![Metric::Recon, Metric::Orth, Metric::Qerr, Metric::Split],
        }
    }

    /// Short name for tables and JSON: `sfr`, `orth`, `qerr`, `recon`,
    /// `split`, or the product (`Q^T C`).
    pub fn name(self) -> String {
        match self {
            Metric::Sfr => "sfr".into(),
            Metric::Orth => "orth".into(),
            Metric::Qerr => "qerr".into(),
            Metric::Recon => "recon".into(),
            Metric::Apply(op) => op.to_string(),
            Metric::Split => "split".into(),
        }
    }

    /// The project's bar: 25 for `orth`, 0 for `split`, 5 for the errors.
    pub fn bar(self) -> f64 {
        match self {
            Metric::Orth => ORTH_BAR,
            Metric::Split => 0.0,
            _ => SFR_BAR,
        }
    }

    /// The contract's gate: 100 for `orth`, 0 for `split`, 20 for the
    /// errors (the contract gives them the bar of `sfr`, so the gate of
    /// `sfr` too).
    pub fn gate(self) -> f64 {
        match self {
            Metric::Orth => ORTH_GATE,
            Metric::Split => 0.0,
            _ => SFR_GATE,
        }
    }
}

/// What a gate measured on one matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct OpMatrixGate {
    /// The operation's status of the matrix.
    pub info: Info,
    /// One value per metric of the report, in its order; empty when
    /// `info` is not OK (the matrix was not measured).
    pub values: Vec<f64>,
}

impl OpMatrixGate {
    fn not_measured(info: Info) -> Self {
        Self {
            info,
            values: Vec::new(),
        }
    }

    fn within(&self, metrics: &[Metric], limit: fn(Metric) -> f64) -> bool {
        self.info.is_ok()
            && self.values.len() == metrics.len()
            && self
                .values
                .iter()
                .zip(metrics)
                .all(|(&v, &m)| v <= limit(m))
    }
}

/// A gate's measurements of every matrix of one or more batches.
#[derive(Clone, Debug, PartialEq)]
pub struct OpReport {
    /// What each matrix's values are.
    pub metrics: Vec<Metric>,
    /// One entry per matrix, in order.
    pub matrices: Vec<OpMatrixGate>,
}

impl OpReport {
    /// An empty report of `metrics`.
    pub fn new(metrics: Vec<Metric>) -> Self {
        Self {
            metrics,
            matrices: Vec::new(),
        }
    }

    /// `geqrf`'s [`GateReport`] as `sfr` and `orth` values, matrices whose
    /// `info` is not OK left unmeasured. `info` has one entry per matrix.
    pub fn from_geqrf(report: &GateReport, info: &[Info]) -> Self {
        let matrices = report
            .matrices
            .iter()
            .zip(info)
            .map(|(g, &info)| match info.is_ok() {
                true => OpMatrixGate {
                    info,
                    values: vec![g.sfr, g.orth],
                },
                false => OpMatrixGate::not_measured(info),
            })
            .collect();
        Self {
            metrics: Metric::of(Operation::Geqrf),
            matrices,
        }
    }

    /// The largest value of `metric` over the measured matrices (NaN if
    /// any is NaN or the report has no such metric; 0 with none measured).
    pub fn worst(&self, metric: Metric) -> f64 {
        let Some(k) = self.metrics.iter().position(|&m| m == metric) else {
            return f64::NAN;
        };
        nan_max(
            self.matrices
                .iter()
                .filter_map(|m| m.values.get(k).copied()),
        )
    }

    /// Matrices with a non-OK `info`, which were not measured.
    pub fn not_measured(&self) -> usize {
        self.matrices.iter().filter(|m| !m.info.is_ok()).count()
    }

    /// Every matrix measured and within the contract's gate.
    pub fn passes_gate(&self) -> bool {
        self.matrices
            .iter()
            .all(|m| m.within(&self.metrics, Metric::gate))
    }

    /// Every matrix measured and within the project's bar.
    pub fn meets_bar(&self) -> bool {
        self.matrices
            .iter()
            .all(|m| m.within(&self.metrics, Metric::bar))
    }

    /// Appends another report's matrices (several inputs of one case).
    ///
    /// # Panics
    ///
    /// If the two reports measure different metrics: their values could
    /// not be read together.
    pub fn extend(&mut self, other: OpReport) {
        assert_eq!(self.metrics, other.metrics, "reports of different gates");
        self.matrices.extend(other.matrices);
    }
}

/// One `ormqr` result to gate: the product `op` and what the backend
/// returned (`c` overwritten, `info`).
#[derive(Clone, Copy, Debug)]
pub struct Applied<'a> {
    /// The product computed.
    pub op: ApplyQ,
    /// The backend's result, laid out as its `C`.
    pub out: &'a [f32],
    /// The backend's status per matrix.
    pub info: &'a [Info],
}

/// What `qr` returned for a batch.
#[derive(Clone, Copy, Debug)]
pub struct QrOutputs<'a> {
    /// `Q`, `batch * n * n`, row-major.
    pub q: &'a [f32],
    /// `R`, `batch * n * n`, row-major.
    pub r: &'a [f32],
    /// Status per matrix.
    pub info: &'a [Info],
}

/// Gates `orgqr`'s `q` (`batch * n * n`, row-major) and `info` against
/// the reflectors `f` it was given: `qerr` and `orth` per matrix.
pub fn check_orgqr(f: Reflectors<'_>, q: &[f32], info: &[Info]) -> Result<OpReport, QrError> {
    let shape = f.shape();
    Shape::check_len("q", shape.a_len(), q.len())?;
    Shape::check_len("info", shape.info_len(), info.len())?;
    let n = shape.n();
    let matrices = per_matrix(shape, |b, par| {
        if !info[b].is_ok() {
            return OpMatrixGate::not_measured(info[b]);
        }
        let q64 = q64_of(f, b, par);
        let qm = widen(&q[b * n * n..(b + 1) * n * n], n, n);
        OpMatrixGate {
            info: info[b],
            values: vec![qerr(qm.as_ref(), q64.as_ref()), orth(qm.as_ref(), par)],
        }
    });
    Ok(OpReport {
        metrics: Metric::of(Operation::Orgqr),
        matrices,
    })
}

/// Gates `ormqr` results against the reflectors `f` and the `C` (`k`
/// columns on the left, rows on the right) they were applied to: one value
/// per entry of `applied`, in its order. A matrix is measured when every
/// result's `info` of it is OK; otherwise it carries the first non-OK code.
pub fn check_ormqr(
    f: Reflectors<'_>,
    k: usize,
    c: &[f32],
    applied: &[Applied<'_>],
) -> Result<OpReport, QrError> {
    let shape = f.shape();
    ApplyQ::check(shape, k, c.len(), shape.info_len())?;
    for a in applied {
        ApplyQ::check(shape, k, a.out.len(), a.info.len())?;
    }
    let (n, len) = (shape.n(), shape.n() * k);
    let matrices = per_matrix(shape, |b, par| {
        if let Some(bad) = applied.iter().map(|a| a.info[b]).find(|i| !i.is_ok()) {
            return OpMatrixGate::not_measured(bad);
        }
        let q64 = q64_of(f, b, par);
        let cb = &c[b * len..(b + 1) * len];
        let values = applied
            .iter()
            .map(|a| {
                apply_error(
                    a.op,
                    q64.as_ref(),
                    n,
                    k,
                    cb,
                    &a.out[b * len..(b + 1) * len],
                    par,
                )
            })
            .collect();
        OpMatrixGate {
            info: Info::OK,
            values,
        }
    });
    Ok(OpReport {
        metrics: applied.iter().map(|a| Metric::Apply(a.op)).collect(),
        matrices,
    })
}

/// Gates `qr`'s outputs for the batch `a`: `recon`, `orth` and `qerr` of
/// its `Q` (against `Q64` of `geqrf`'s reflectors) and `split`, the entries
/// that differ from `geqrf` (`geqrf_info`, `R = triu(H)`) and `orgqr`
/// (`orgqr_q`) run on the same input, which must be none.
pub fn check_qr(
    a: &[f32],
    geqrf: Reflectors<'_>,
    geqrf_info: &[Info],
    orgqr_q: &[f32],
    qr: QrOutputs<'_>,
) -> Result<OpReport, QrError> {
    let shape = geqrf.shape();
    let len = shape.a_len();
    for (what, got) in [
        ("a", a.len()),
        ("orgqr q", orgqr_q.len()),
        ("q", qr.q.len()),
        ("r", qr.r.len()),
    ] {
        Shape::check_len(what, len, got)?;
    }
    Shape::check_len("geqrf info", shape.info_len(), geqrf_info.len())?;
    Shape::check_len("info", shape.info_len(), qr.info.len())?;
    let mut triu = vec![0.0f32; len];
    upper_triangle(shape, geqrf.h(), geqrf_info, &mut triu);
    let n = shape.n();
    let matrices = per_matrix(shape, |b, par| {
        let info = qr.info[b];
        if !info.is_ok() {
            return OpMatrixGate::not_measured(info);
        }
        let m = b * n * n..(b + 1) * n * n;
        let split = usize::from(info != geqrf_info[b])
            + differing(&qr.r[m.clone()], &triu[m.clone()])
            + differing(&qr.q[m.clone()], &orgqr_q[m.clone()]);
        let q64 = q64_of(geqrf, b, par);
        let qm = widen(&qr.q[m.clone()], n, n);
        let recon = recon(
            widen(&a[m.clone()], n, n).as_ref(),
            qm.as_ref(),
            widen(&qr.r[m], n, n).as_ref(),
            par,
        );
        OpMatrixGate {
            info,
            values: vec![
                recon,
                orth(qm.as_ref(), par),
                qerr(qm.as_ref(), q64.as_ref()),
                split as f64,
            ],
        }
    });
    Ok(OpReport {
        metrics: Metric::of(Operation::Qr),
        matrices,
    })
}

/// Entries of `x` and `y` that are not the same bits; every NaN matches
/// every NaN, since the contract asks for NaN, not for one NaN pattern.
pub fn differing(x: &[f32], y: &[f32]) -> usize {
    x.iter()
        .zip(y)
        .filter(|(a, b)| a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()))
        .count()
        + x.len().abs_diff(y.len())
}

/// Runs `one(b, par)` for every matrix of `shape`: in parallel over the
/// matrices when the batch can fill the rayon pool, else one at a time with
/// parallel products (which also bounds memory), as [`crate::check`] does.
fn per_matrix(shape: Shape, one: impl Fn(usize, Par) -> OpMatrixGate + Sync) -> Vec<OpMatrixGate> {
    let count = if shape.n() == 0 { 0 } else { shape.batch() };
    if count >= rayon::current_num_threads() {
        (0..count)
            .into_par_iter()
            .map(|b| one(b, Par::Seq))
            .collect()
    } else {
        (0..count).map(|b| one(b, Par::rayon(0))).collect()
    }
}

/// A row-major `f32` matrix widened into faer's layout.
fn widen(m: &[f32], rows: usize, cols: usize) -> Mat<f64> {
    Mat::from_fn(rows, cols, |i, j| f64::from(m[i * cols + j]))
}

/// `Q64` of matrix `b` of `f`.
fn q64_of(f: Reflectors<'_>, b: usize, par: Par) -> Mat<f64> {
    let n = f.shape().n();
    let h = widen(&f.h()[b * n * n..(b + 1) * n * n], n, n);
    let tau: Vec<f64> = f.tau()[b * n..(b + 1) * n]
        .iter()
        .map(|&t| f64::from(t))
        .collect();
    q_from_reflectors(h.as_ref(), &tau, par)
}

fn qerr(q: MatRef<'_, f64>, q64: MatRef<'_, f64>) -> f64 {
    let n = q.nrows();
    let diff = one_norm_where(q, |_, _| true, |x, i, j| x - q64[(i, j)]);
    scaled(diff, n as f64 * EPS_F32)
}

fn orth(q: MatRef<'_, f64>, par: Par) -> f64 {
    let n = q.nrows();
    let mut g = Mat::<f64>::zeros(n, n);
    // Q^T Q is symmetric: its lower triangle is enough (half the flops).
    triangular::matmul(
        g.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        q.transpose(),
        BlockStructure::Rectangular,
        q,
        BlockStructure::Rectangular,
        1.0,
        par,
    );
    let norm = symmetric_one_norm(g.as_ref(), |x, i, j| if i == j { x - 1.0 } else { x });
    scaled(norm, n as f64 * EPS_F32)
}

fn recon(a: MatRef<'_, f64>, q: MatRef<'_, f64>, r: MatRef<'_, f64>, par: Par) -> f64 {
    let n = a.nrows();
    let mut qr = Mat::<f64>::zeros(n, n);
    // A full product, not a triangular one: R's lower triangle is whatever
    // the backend returned, and it counts.
    matmul(qr.as_mut(), Accum::Replace, q, r, 1.0, par);
    let diff = one_norm_where(qr.as_ref(), |_, _| true, |x, i, j| a[(i, j)] - x);
    scaled(diff, n as f64 * EPS_F32 * one_norm(a))
}

/// The scaled error of one `ormqr` result `out` for the `C` `c`, both
/// row-major (`n x k` on the left, `k x n` on the right).
fn apply_error(
    op: ApplyQ,
    q64: MatRef<'_, f64>,
    n: usize,
    k: usize,
    c: &[f32],
    out: &[f32],
    par: Par,
) -> f64 {
    let opq = match op.transpose {
        Transpose::No => q64,
        Transpose::Yes => q64.transpose(),
    };
    let (rows, cols) = match op.side {
        Side::Left => (n, k),
        Side::Right => (k, n),
    };
    let cm = widen(c, rows, cols);
    let mut want = Mat::<f64>::zeros(rows, cols);
    match op.side {
        Side::Left => matmul(want.as_mut(), Accum::Replace, opq, cm.as_ref(), 1.0, par),
        Side::Right => matmul(want.as_mut(), Accum::Replace, cm.as_ref(), opq, 1.0, par),
    }
    let diff = one_norm_where(
        want.as_ref(),
        |_, _| true,
        |x, i, j| f64::from(out[i * cols + j]) - x,
    );
    scaled(diff, n as f64 * EPS_F32 * one_norm(cm.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Case, Spec, generate, geqr2_f64, householder_product, randn_matrices};

    /// A batch, its `f64` `geqr2` rounded to `f32`, and `Q64` of those
    /// reflectors rounded to `f32`: outputs as right as `f32` can hold.
    struct Exact {
        shape: Shape,
        a: Vec<f32>,
        h: Vec<f32>,
        tau: Vec<f32>,
        q: Vec<f32>,
    }

    fn exact(batch: usize, n: usize) -> Exact {
        let spec = Spec {
            batch,
            n,
            cond: 1.0,
            case: Case::Dense,
        };
        let a = generate(&spec, 11);
        let (mut h, mut tau, mut q) = (Vec::new(), Vec::new(), Vec::new());
        for m in a.chunks_exact(n * n) {
            let (hb, tb) = geqr2_f64(n, &m.iter().map(|&x| f64::from(x)).collect::<Vec<_>>());
            let hb: Vec<f32> = hb.iter().map(|&x| x as f32).collect();
            let tb: Vec<f32> = tb.iter().map(|&x| x as f32).collect();
            q.extend(householder_product(n, &hb, &tb).iter().map(|&x| x as f32));
            h.extend(hb);
            tau.extend(tb);
        }
        Exact {
            shape: spec.shape().unwrap(),
            a,
            h,
            tau,
            q,
        }
    }

    impl Exact {
        fn refl(&self) -> Reflectors<'_> {
            Reflectors::new(self.shape, &self.h, &self.tau).unwrap()
        }
    }

    /// `op(Q) C` or `C op(Q)` of one row-major matrix, in `f64`, rounded.
    fn apply(op: ApplyQ, q: &[f32], n: usize, k: usize, c: &[f32]) -> Vec<f32> {
        let qe = |i: usize, j: usize| match op.transpose {
            Transpose::No => f64::from(q[i * n + j]),
            Transpose::Yes => f64::from(q[j * n + i]),
        };
        match op.side {
            Side::Left => (0..n * k)
                .map(|x| {
                    let (i, j) = (x / k, x % k);
                    (0..n)
                        .map(|l| qe(i, l) * f64::from(c[l * k + j]))
                        .sum::<f64>() as f32
                })
                .collect(),
            Side::Right => (0..k * n)
                .map(|x| {
                    let (i, j) = (x / n, x % n);
                    (0..n)
                        .map(|l| f64::from(c[i * n + l]) * qe(l, j))
                        .sum::<f64>() as f32
                })
                .collect(),
        }
    }

    #[test]
    fn orgqr_gate_passes_rounded_q64_and_fails_what_is_wrong() {
        let e = exact(3, 40);
        let ok = vec![Info::OK; 3];
        let r = check_orgqr(e.refl(), &e.q, &ok).unwrap();
        assert_eq!(r.metrics, [Metric::Qerr, Metric::Orth]);
        // Rounding alone: half an ulp per entry, far inside the bar.
        assert!(r.meets_bar() && r.worst(Metric::Qerr) < 0.5, "{r:?}");
        assert!(r.worst(Metric::Orth) < 1.0, "{r:?}");

        let mut bad = e.q.clone();
        bad[40 * 40 + 7] += 1e-3; // matrix 1 only
        let r = check_orgqr(e.refl(), &bad, &ok).unwrap();
        assert!(!r.meets_bar() && !r.passes_gate());
        assert!(r.matrices[0].values[0] < 0.5 && r.matrices[1].values[0] > 20.0);

        bad[2 * 40 * 40 + 3] = f32::NAN;
        let r = check_orgqr(e.refl(), &bad, &ok).unwrap();
        assert!(r.matrices[2].values.iter().all(|v| v.is_nan()));
        assert!(r.worst(Metric::Qerr).is_nan());

        // Q^T for Q: orthogonal, but not the product of these reflectors.
        let mut qt = e.q.clone();
        for (m, t) in e.q.chunks_exact(1600).zip(qt.chunks_exact_mut(1600)) {
            (0..40).for_each(|i| (0..40).for_each(|j| t[i * 40 + j] = m[j * 40 + i]));
        }
        let r = check_orgqr(e.refl(), &qt, &ok).unwrap();
        assert!(r.worst(Metric::Orth) < 1.0 && r.worst(Metric::Qerr) > 100.0);
    }

    #[test]
    fn non_ok_matrices_are_listed_not_measured() {
        let e = exact(2, 8);
        let info = [Info::OK, Info::NON_FINITE];
        let mut q = e.q.clone();
        q[64..].fill(f32::NAN);
        let r = check_orgqr(e.refl(), &q, &info).unwrap();
        assert_eq!(r.not_measured(), 1);
        assert!(r.matrices[1].values.is_empty() && r.matrices[1].info == Info::NON_FINITE);
        assert!(
            r.worst(Metric::Qerr) < 0.5,
            "the measured matrix counts alone"
        );
        assert!(!r.meets_bar() && !r.passes_gate());
        assert!(r.worst(Metric::Sfr).is_nan(), "no such metric");
    }

    #[test]
    fn ormqr_gate_checks_each_product_and_its_side() {
        let (n, k) = (24, 5);
        let e = exact(2, n);
        let c = randn_matrices(2, n * k, 3);
        let ok = vec![Info::OK; 2];
        let outs: Vec<(ApplyQ, Vec<f32>)> = ApplyQ::ALL
            .iter()
            .map(|&op| {
                let out = c
                    .chunks_exact(n * k)
                    .zip(e.q.chunks_exact(n * n))
                    .flat_map(|(cb, qb)| apply(op, qb, n, k, cb))
                    .collect();
                (op, out)
            })
            .collect();
        let applied: Vec<Applied<'_>> = outs
            .iter()
            .map(|(op, out)| Applied {
                op: *op,
                out,
                info: &ok,
            })
            .collect();
        let r = check_ormqr(e.refl(), k, &c, &applied).unwrap();
        assert_eq!(r.metrics.len(), 4);
        assert!(r.meets_bar(), "{r:?}");
        assert!(
            ApplyQ::ALL
                .iter()
                .all(|&op| r.worst(Metric::Apply(op)) < 1.0)
        );

        // Q C presented as Q^T C is wrong.
        let swapped = [Applied {
            op: ApplyQ::QT_LEFT,
            ..applied[0]
        }];
        let r = check_ormqr(e.refl(), k, &c, &swapped).unwrap();
        assert!(!r.passes_gate(), "{r:?}");

        // k = 0 is an empty product, exact by definition.
        let r = check_ormqr(
            e.refl(),
            0,
            &[],
            &[Applied {
                op: ApplyQ::ALL[2],
                out: &[],
                info: &ok,
            }],
        )
        .unwrap();
        assert!(r.meets_bar() && r.worst(Metric::Apply(ApplyQ::ALL[2])) == 0.0);

        assert!(matches!(
            check_ormqr(e.refl(), k, &c[1..], &applied),
            Err(QrError::LengthMismatch { what: "c", .. })
        ));
    }

    #[test]
    fn qr_gate_counts_every_bit_that_differs_from_the_split_calls() {
        let n = 30;
        let e = exact(2, n);
        let info = [Info::OK; 2];
        let mut r = vec![0.0f32; e.h.len()];
        upper_triangle(e.shape, &e.h, &info, &mut r);
        let outputs = |q: &[f32], r: &[f32]| {
            check_qr(&e.a, e.refl(), &info, &e.q, QrOutputs { q, r, info: &info }).unwrap()
        };
        let good = outputs(&e.q, &r);
        assert!(good.meets_bar(), "{good:?}");
        assert_eq!(good.worst(Metric::Split), 0.0);
        // The reconstruction sees A through R's rounding: well inside the bar.
        assert!(good.worst(Metric::Recon) < 1.0, "{good:?}");

        let mut r1 = r.clone();
        r1[n * n + 1] = f32::from_bits(r1[n * n + 1].to_bits() ^ 1);
        let g = outputs(&e.q, &r1);
        assert_eq!(g.matrices[1].values[3], 1.0);
        assert!(!g.meets_bar() && !g.passes_gate());
        assert!(
            g.worst(Metric::Recon) < 1.0,
            "one ulp is invisible to recon"
        );

        let mut r2 = r.clone();
        r2[n] = 1e-30; // below the diagonal of matrix 0
        assert_eq!(outputs(&e.q, &r2).matrices[0].values[3], 1.0);

        let mut q = e.q.clone();
        q[5] = -q[5];
        let g = outputs(&q, &r);
        assert!(g.matrices[0].values[3] == 1.0 && g.matrices[0].values[0] > 1.0);
    }

    #[test]
    fn differing_treats_every_nan_alike() {
        let qnan = f32::NAN;
        let other = f32::from_bits(qnan.to_bits() | 1);
        assert_eq!(differing(&[1.0, qnan, 0.0], &[1.0, other, -0.0]), 1);
        assert_eq!(differing(&[1.0], &[1.0, 2.0]), 1);
    }

    #[test]
    fn metric_bars_and_gates() {
        assert_eq!(Metric::of(Operation::Geqrf), [Metric::Sfr, Metric::Orth]);
        assert_eq!(Metric::of(Operation::Ormqr(ApplyQ::QT_LEFT)).len(), 4);
        assert_eq!(Metric::Apply(ApplyQ::QT_LEFT).name(), "Q^T C");
        assert_eq!((Metric::Qerr.bar(), Metric::Qerr.gate()), (5.0, 20.0));
        assert_eq!((Metric::Orth.bar(), Metric::Orth.gate()), (25.0, 100.0));
        assert_eq!(Metric::Split.gate(), 0.0);
    }
}
