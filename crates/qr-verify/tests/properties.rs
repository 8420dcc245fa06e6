//! Properties of qr-cpu's factorizations over every case, random orders
//! (1..=96, block edges always included), batches (1..=6) and seeds.

mod support;

use proptest::prelude::*;
use qr_core::Shape;
use qr_verify::{Case, Spec, generate, geqr2_f64};
use support::{cpu, describe, run, run_on};

/// Orders around the block boundaries come up as often as all others together.
fn order() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![31usize, 32, 33, 63, 64, 65]),
        1usize..=96,
    ]
}

fn case() -> impl Strategy<Value = Case> {
    prop::sample::select(Case::all().collect::<Vec<_>>())
}

fn cond() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![0.0, 1.0, 2.0, 4.0])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_case_meets_the_bar_with_valid_tau(
        n in order(), batch in 1usize..=6, case in case(), cond in cond(), seed in any::<u64>()
    ) {
        let spec = Spec { batch, n, cond, case };
        let r = run(&cpu(), &spec, seed);
        prop_assert!(r.f.all_ok(), "{spec}: info {:?}", r.f.info);
        prop_assert!(r.report.meets_bar(), "{spec} seed {seed}: {}", describe(&r.report));
        for (k, &t) in r.f.tau.iter().enumerate() {
            prop_assert!((0.0..=2.0).contains(&t), "{spec} seed {seed}: tau[{k}] = {t}");
        }
    }

    #[test]
    fn agrees_with_the_f64_reference_when_well_conditioned(
        n in order(), batch in 1usize..=6, seed in any::<u64>()
    ) {
        // randn + 3 sqrt(n) I: singular values within [1, 5] sqrt(n) and every
        // alpha far from zero, so (H, tau) is a well-conditioned function of A
        // and the f32 factorization must match the f64 one closely.
        let spec = Spec { batch, n, cond: 0.0, case: Case::Dense };
        let mut a = generate(&spec, seed);
        let shift = 3.0 * (n as f32).sqrt();
        for m in a.chunks_exact_mut(n * n) {
            (0..n).for_each(|i| m[i * n + i] += shift);
        }
        let r = run_on(&cpu(), spec.shape().unwrap(), a);
        for (b, m) in r.a.chunks_exact(n * n).enumerate() {
            let wide: Vec<f64> = m.iter().map(|&x| f64::from(x)).collect();
            let (h, tau) = geqr2_f64(n, &wide);
            let rmax = (0..n).flat_map(|i| (i..n).map(move |j| (i, j)))
                .map(|(i, j)| h[i * n + j].abs()).fold(0.0, f64::max);
            let got = &r.f.h[b * n * n..(b + 1) * n * n];
            for i in 0..n {
                for j in 0..n {
                    let (x, y) = (f64::from(got[i * n + j]), h[i * n + j]);
                    // R entries relative to R's largest, v entries (|v| < 1) absolutely.
                    let tol = if i <= j { 1e-5 * rmax } else { 1e-5 };
                    prop_assert!((x - y).abs() <= tol, "n {n} b {b} H[{i}][{j}]: {x} vs {y}");
                }
                let t = f64::from(r.f.tau[b * n + i]);
                prop_assert!((t - tau[i]).abs() <= 1e-5, "n {n} b {b} tau[{i}]: {t} vs {}", tau[i]);
            }
        }
    }

    #[test]
    fn exactly_zero_sub_columns_give_tau_exactly_zero(
        n in order(), k in 0usize..=96, zero_cols in 0usize..=24, seed in any::<u64>()
    ) {
        // The first k columns upper triangular (their sub-columns are zero when
        // reached, since the earlier reflectors are identities), and the last
        // zero_cols columns zero (reflectors keep a zero column exactly zero).
        let k = k.min(n);
        let zero_cols = zero_cols.min(n - k);
        let spec = Spec { batch: 1, n, cond: 0.0, case: Case::Dense };
        let mut a = generate(&spec, seed);
        for i in 0..n {
            for j in 0..n {
                if (j < k && i > j) || j >= n - zero_cols {
                    a[i * n + j] = 0.0;
                }
            }
        }
        let r = run_on(&cpu(), Shape::new(1, n).unwrap(), a);
        for j in (0..k).chain(n - zero_cols..n) {
            prop_assert_eq!(r.f.tau[j], 0.0, "n {} k {} zero {}: tau[{}]", n, k, zero_cols, j);
            for i in j + 1..n {
                prop_assert_eq!(r.f.h[i * n + j], 0.0, "v below a zero sub-column");
            }
        }
        for j in 0..k {
            // Nothing was applied yet: R's first k rows' diagonals are alpha itself.
            prop_assert_eq!(r.f.h[j * n + j], r.a[j * n + j]);
        }
        for j in n - zero_cols..n {
            prop_assert!((0..n).all(|i| r.f.h[i * n + j] == 0.0), "zero column {} of R", j);
        }
        // The last column never has a sub-column: its tau is always 0.
        prop_assert_eq!(r.f.tau[n - 1], 0.0);
        prop_assert!(r.report.meets_bar(), "{}", describe(&r.report));
    }
}

/// The block-edge orders for every case, deterministically, whatever proptest draws.
#[test]
fn block_edges_every_case() {
    for n in [1, 2, 31, 32, 33, 63, 64, 65, 96, 97, 128, 129] {
        for case in Case::all() {
            let spec = Spec {
                batch: 3,
                n,
                cond: 2.0,
                case,
            };
            let r = run(&cpu(), &spec, n as u64);
            assert!(r.report.meets_bar(), "{spec}: {}", describe(&r.report));
            assert!(r.f.tau.iter().all(|t| (0.0..=2.0).contains(t)), "{spec}");
        }
    }
}
