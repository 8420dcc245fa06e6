use qr_core::{QrError, Reflectors, Shape, Side, Transpose, upper_triangle};

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
