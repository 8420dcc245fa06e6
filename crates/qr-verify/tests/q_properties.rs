//! Properties of qr-cpu's `orgqr`, `ormqr` and `qr` over every case, random
//! orders (1..=96, with the edges of qr-cpu's blocks and of its unblocked
//! range, 48, drawn as often as all others), batches and seeds, gated by
//! this crate's `f64` product of the same reflectors.

mod support;

use proptest::prelude::*;
use qr_core::{
    ApplyQ, Backend, EPS_F32, Factorization, Info, Matrices, Reflectors, Shape, Side, geqrf, orgqr,
    ormqr, qr, upper_triangle,
};
use qr_verify::gate::ORTH_BAR;
use qr_verify::q_gate::{Applied, QrOutputs, differing};
use qr_verify::{Case, Spec, check_orgqr, check_ormqr, check_qr, generate, randn_matrices};
use support::{cpu, describe_op};

fn order() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![31usize, 32, 33, 48, 49, 63, 64, 65]),
        1usize..=96,
    ]
}

fn case() -> impl Strategy<Value = Case> {
    prop::sample::select(Case::all().collect::<Vec<_>>())
}

fn apply() -> impl Strategy<Value = ApplyQ> {
    prop::sample::select(ApplyQ::ALL.to_vec())
}

/// A generated batch and its factorization by `backend`, which must succeed.
fn factored(backend: &dyn Backend, spec: &Spec, seed: u64) -> (Vec<f32>, Factorization) {
    let a = generate(spec, seed);
    let f = geqrf(backend, spec.shape().unwrap(), &a).expect("geqrf runs");
    assert!(f.all_ok(), "{spec}: geqrf info {:?}", f.info);
    (a, f)
}

/// `||X - I||_1 / (n eps)` over every matrix of `x` (`n x n` each).
fn worst_from_identity(n: usize, x: &[f32]) -> f64 {
    x.chunks_exact(n * n)
        .map(|m| {
            (0..n)
                .map(|j| {
                    (0..n)
                        .map(|i| (f64::from(m[i * n + j]) - if i == j { 1.0 } else { 0.0 }).abs())
                        .sum::<f64>()
                })
                .fold(
                    0.0,
                    |w: f64, s| if s.is_nan() { f64::NAN } else { w.max(s) },
                )
        })
        .fold(
            0.0,
            |w: f64, s| if s.is_nan() { f64::NAN } else { w.max(s) },
        )
        / (n as f64 * EPS_F32)
}

fn identities(batch: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; batch * n * n];
    for m in c.chunks_exact_mut(n * n) {
        (0..n).for_each(|i| m[i * n + i] = 1.0);
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn orgqr_meets_the_bar(
        n in order(), batch in 1usize..=4, case in case(), seed in any::<u64>()
    ) {
        let spec = Spec { batch, n, cond: 2.0, case };
        let (_, f) = factored(&cpu(), &spec, seed);
        let q = orgqr(&cpu(), f.shape, &f.h, &f.tau).expect("orgqr runs");
        let refl = Reflectors::new(f.shape, &f.h, &f.tau).unwrap();
        let r = check_orgqr(refl, &q.data, &q.info).unwrap();
        prop_assert!(r.meets_bar(), "{spec} seed {seed}: {}", describe_op(&r));
    }

    #[test]
    fn ormqr_meets_the_bar_for_every_side_transpose_and_width(
        n in order(), batch in 1usize..=3, case in case(), op in apply(),
        k in prop_oneof![Just(0usize), 1usize..=8, 90usize..=100], seed in any::<u64>()
    ) {
        let spec = Spec { batch, n, cond: 2.0, case };
        let (_, f) = factored(&cpu(), &spec, seed);
        let c = randn_matrices(batch, n * k, !seed);
        let out = ormqr(&cpu(), f.shape, &f.h, &f.tau, op, k, &c).expect("ormqr runs");
        let (rows, cols) = match op.side { Side::Left => (n, k), Side::Right => (k, n) };
        prop_assert_eq!((out.rows, out.cols), (rows, cols));
        let refl = Reflectors::new(f.shape, &f.h, &f.tau).unwrap();
        let applied = [Applied { op, out: &out.data, info: &out.info }];
        let r = check_ormqr(refl, k, &c, &applied).unwrap();
        prop_assert!(r.meets_bar(), "{spec} {op} k {k} seed {seed}: {}", describe_op(&r));
    }

    #[test]
    fn q_transpose_applied_to_orgqr_gives_the_identity(
        n in order(), batch in 1usize..=3, case in case(), seed in any::<u64>()
    ) {
        let spec = Spec { batch, n, cond: 2.0, case };
        let (_, f) = factored(&cpu(), &spec, seed);
        let q = orgqr(&cpu(), f.shape, &f.h, &f.tau).expect("orgqr runs");
        let x = ormqr(&cpu(), f.shape, &f.h, &f.tau, ApplyQ::QT_LEFT, n, &q.data).expect("ormqr runs");
        prop_assert!(x.all_ok());
        let err = worst_from_identity(n, &x.data);
        prop_assert!(err <= ORTH_BAR, "{spec} seed {seed}: ||Q^T Q - I||_1 / (n eps) = {err}");
    }

    #[test]
    fn q_applied_to_the_identity_is_orgqr_within_the_gate(
        n in order(), batch in 1usize..=3, case in case(), seed in any::<u64>()
    ) {
        let spec = Spec { batch, n, cond: 2.0, case };
        let (_, f) = factored(&cpu(), &spec, seed);
        let q = orgqr(&cpu(), f.shape, &f.h, &f.tau).expect("orgqr runs");
        let op = ApplyQ::ALL[0]; // Q C
        let x = ormqr(&cpu(), f.shape, &f.h, &f.tau, op, n, &identities(batch, n)).expect("ormqr runs");
        let refl = Reflectors::new(f.shape, &f.h, &f.tau).unwrap();
        // Q C with C = I is a Q: it passes orgqr's gate, and is orgqr's
        // result to within the bar of both.
        let r = check_orgqr(refl, &x.data, &x.info).unwrap();
        prop_assert!(r.meets_bar(), "{spec} seed {seed}: {}", describe_op(&r));
        let diff = q.data.chunks_exact(n * n).zip(x.data.chunks_exact(n * n))
            .map(|(a, b)| (0..n).map(|j| (0..n)
                .map(|i| (f64::from(a[i * n + j]) - f64::from(b[i * n + j])).abs())
                .sum::<f64>()).fold(0.0, f64::max))
            .fold(0.0, f64::max) / (n as f64 * EPS_F32);
        prop_assert!(diff <= 2.0 * qr_verify::gate::SFR_BAR, "{spec} seed {seed}: {diff}");
    }

    #[test]
    fn qr_is_geqrf_then_orgqr_bit_for_bit(
        n in order(), batch in 1usize..=4, case in case(), seed in any::<u64>()
    ) {
        let spec = Spec { batch, n, cond: 2.0, case };
        let (a, f) = factored(&cpu(), &spec, seed);
        let q = orgqr(&cpu(), f.shape, &f.h, &f.tau).expect("orgqr runs");
        let out = qr(&cpu(), f.shape, &a).expect("qr runs");
        let mut r = vec![0.0f32; f.h.len()];
        upper_triangle(f.shape, &f.h, &f.info, &mut r);
        prop_assert_eq!(&out.info, &f.info);
        prop_assert_eq!(differing(&out.r, &r), 0, "{} seed {}: R", spec, seed);
        prop_assert_eq!(differing(&out.q, &q.data), 0, "{} seed {}: Q", spec, seed);
        let refl = Reflectors::new(f.shape, &f.h, &f.tau).unwrap();
        let outputs = QrOutputs { q: &out.q, r: &out.r, info: &out.info };
        let g = check_qr(&a, refl, &f.info, &q.data, outputs).unwrap();
        prop_assert!(g.meets_bar(), "{spec} seed {seed}: {}", describe_op(&g));
    }

    #[test]
    fn a_poisoned_matrix_leaves_the_rest_of_the_batch_unchanged(
        n in 2usize..=70, batch in 2usize..=4, case in case(), seed in any::<u64>(),
        pick in any::<prop::sample::Index>(), op in apply(), poison_tau in any::<bool>()
    ) {
        let spec = Spec { batch, n, cond: 1.0, case };
        let (a, f) = factored(&cpu(), &spec, seed);
        let bad = pick.index(batch);
        let (len, shape) = (n * n, f.shape);
        let mut h = f.h.clone();
        let mut tau = f.tau.clone();
        if poison_tau {
            tau[bad * n] = f32::NAN;
        } else {
            h[bad * len + (n - 1) * n] = f32::INFINITY; // (n-1, 0): below the diagonal
        }
        let c = randn_matrices(batch, len, seed);
        let runs = |h: &[f32], tau: &[f32]| -> (Matrices, Matrices) {
            (
                orgqr(&cpu(), shape, h, tau).expect("orgqr runs"),
                ormqr(&cpu(), shape, h, tau, op, n, &c).expect("ormqr runs"),
            )
        };
        let (q0, x0) = runs(&f.h, &f.tau);
        let (q1, x1) = runs(&h, &tau);
        for (clean, poisoned) in [(&q0, &q1), (&x0, &x1)] {
            for b in 0..batch {
                let m = b * len..(b + 1) * len;
                if b == bad {
                    prop_assert_eq!(poisoned.info[b], Info::NON_FINITE);
                    prop_assert!(poisoned.data[m].iter().all(|x| x.is_nan()));
                } else {
                    prop_assert_eq!(poisoned.info[b], Info::OK);
                    prop_assert_eq!(differing(&poisoned.data[m.clone()], &clean.data[m]), 0, "matrix {}", b);
                }
            }
        }

        // A NaN in A: qr flags that matrix alone, NaN in its Q and R.
        let mut a1 = a.clone();
        a1[bad * len + n / 2] = f32::NAN;
        let clean = qr(&cpu(), shape, &a).expect("qr runs");
        let poisoned = qr(&cpu(), shape, &a1).expect("qr runs");
        for b in 0..batch {
            let m = b * len..(b + 1) * len;
            if b == bad {
                prop_assert_eq!(poisoned.info[b], Info::NON_FINITE);
                prop_assert!(poisoned.q[m.clone()].iter().chain(&poisoned.r[m]).all(|x| x.is_nan()));
            } else {
                prop_assert_eq!(poisoned.info[b], Info::OK);
                prop_assert_eq!(differing(&poisoned.q[m.clone()], &clean.q[m.clone()]), 0);
                prop_assert_eq!(differing(&poisoned.r[m.clone()], &clean.r[m]), 0);
            }
        }

        // A NaN in C is no info: it stays in that matrix's product alone.
        let mut c1 = c.clone();
        c1[bad * len] = f32::NAN;
        let y = ormqr(&cpu(), shape, &f.h, &f.tau, op, n, &c1).expect("ormqr runs");
        prop_assert!(y.all_ok());
        prop_assert!(y.data[bad * len..(bad + 1) * len].iter().any(|x| x.is_nan()));
        for b in (0..batch).filter(|&b| b != bad) {
            let m = b * len..(b + 1) * len;
            prop_assert_eq!(differing(&y.data[m.clone()], &x0.data[m]), 0, "matrix {}", b);
        }
    }
}

/// Orders across qr-cpu's block edges for every case, deterministically,
/// every operation gated.
#[test]
fn block_edges_every_case_every_operation() {
    for n in [1, 2, 31, 32, 33, 48, 49, 63, 64, 65, 127, 128, 129, 200] {
        for case in Case::all() {
            let spec = Spec {
                batch: 2,
                n,
                cond: 2.0,
                case,
            };
            let (a, f) = factored(&cpu(), &spec, n as u64);
            let refl = Reflectors::new(f.shape, &f.h, &f.tau).unwrap();
            let q = orgqr(&cpu(), f.shape, &f.h, &f.tau).unwrap();
            let r = check_orgqr(refl, &q.data, &q.info).unwrap();
            assert!(r.meets_bar(), "orgqr {spec}: {}", describe_op(&r));

            let c = randn_matrices(2, n * n, 1);
            let outs: Vec<Matrices> = ApplyQ::ALL
                .iter()
                .map(|&op| ormqr(&cpu(), f.shape, &f.h, &f.tau, op, n, &c).unwrap())
                .collect();
            let applied: Vec<Applied<'_>> = ApplyQ::ALL
                .iter()
                .zip(&outs)
                .map(|(&op, o)| Applied {
                    op,
                    out: &o.data,
                    info: &o.info,
                })
                .collect();
            let r = check_ormqr(refl, n, &c, &applied).unwrap();
            assert!(r.meets_bar(), "ormqr {spec}: {}", describe_op(&r));

            let out = qr(&cpu(), f.shape, &a).unwrap();
            let outputs = QrOutputs {
                q: &out.q,
                r: &out.r,
                info: &out.info,
            };
            let r = check_qr(&a, refl, &f.info, &q.data, outputs).unwrap();
            assert!(r.meets_bar(), "qr {spec}: {}", describe_op(&r));
        }
    }
}

/// `n = 0` and `batch = 0` are empty, not errors.
#[test]
fn empty_shapes_are_empty_results() {
    for shape in [Shape::new(0, 5).unwrap(), Shape::new(3, 0).unwrap()] {
        let f = geqrf(&cpu(), shape, &[]).unwrap();
        let q = orgqr(&cpu(), shape, &f.h, &f.tau).unwrap();
        assert!(q.data.is_empty());
        let x = ormqr(&cpu(), shape, &f.h, &f.tau, ApplyQ::QT_LEFT, 4, &[]).unwrap();
        assert!(x.data.is_empty() && x.info.len() == shape.batch());
        let out = qr(&cpu(), shape, &[]).unwrap();
        assert!(out.q.is_empty() && out.r.is_empty());
    }
}
