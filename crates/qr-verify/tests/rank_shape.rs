//! Rank-deficient and nearly rank-deficient inputs: R keeps its full
//! upper-triangular shape with the tiny (or zero) trailing diagonal a
//! textbook geqrf gives. A backend that deflated, pivoted or skipped the
//! trailing columns would leave a staircase and fail here.

mod support;

use qr_verify::{Case, Spec, diag_r_mismatch, geqr2_f64};
use support::{cpu, describe, run};

/// Per-row 2-norms of the upper triangle of a row-major `n x n` matrix.
fn row_norms(n: usize, h: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    (0..n)
        .map(|i| (i..n).map(|j| h(i, j).powi(2)).sum::<f64>().sqrt())
        .collect()
}

fn check_shape(case: Case, n: usize) {
    let spec = Spec {
        batch: 2,
        n,
        cond: 0.0,
        case,
    };
    let r = run(&cpu(), &spec, 77 + n as u64);
    assert!(r.report.meets_bar(), "{spec}: {}", describe(&r.report));
    let rank = 3 * n / 4;
    for (b, a) in r.a.chunks_exact(n * n).enumerate() {
        let h = &r.f.h[b * n * n..(b + 1) * n * n];
        let tau = &r.f.tau[b * n..(b + 1) * n];
        let wide: Vec<f64> = a.iter().map(|&x| f64::from(x)).collect();
        let (hr, tr) = geqr2_f64(n, &wide);
        let rmax = (0..n).map(|i| hr[i * n + i].abs()).fold(0.0, f64::max);

        // |diag R| as the f64 textbook gives it, to f32 accuracy of ||A||;
        // nalgebra's QR says the same.
        for i in 0..n {
            let (x, y) = (f64::from(h[i * n + i]).abs(), hr[i * n + i].abs());
            assert!(
                (x - y).abs() <= 1e-5 * rmax,
                "{spec} b {b}: |R[{i}][{i}]| {x:e} vs {y:e}"
            );
        }
        assert!(diag_r_mismatch(n, a, h) <= 1e-5, "{spec}: oracle");

        // Row by row, the upper triangle carries the same weight.
        let got = row_norms(n, |i, j| f64::from(h[i * n + j]));
        let want = row_norms(n, |i, j| hr[i * n + j]);
        for i in 0..n {
            assert!(
                (got[i] - want[i]).abs() <= 1e-5 * rmax,
                "{spec}: row {i} {:e} vs {:e}",
                got[i],
                want[i]
            );
        }

        match case {
            Case::Rankdef => {
                // Zero columns stay exactly zero: tau 0 and a zero column of R.
                for j in rank..n {
                    assert_eq!(tau[j], 0.0, "{spec}: tau[{j}]");
                    assert_eq!(tr[j], 0.0);
                    assert!((0..n).all(|i| h[i * n + j] == 0.0), "{spec}: column {j}");
                }
                let lead = (0..rank)
                    .map(|i| f64::from(h[i * n + i]).abs())
                    .fold(f64::INFINITY, f64::min);
                assert!(lead > 1e-3 * rmax, "{spec}: leading diagonal {lead:e}");
            }
            Case::Nearrank => {
                // The trailing diagonal is tiny (the 1e-5 perturbation) yet not
                // zero, and every trailing reflector is a real one.
                for j in rank..n {
                    let d = f64::from(h[j * n + j]).abs();
                    assert!(d > 0.0 && d < 1e-3 * rmax, "{spec}: |R[{j}][{j}]| = {d:e}");
                    // Same tiny magnitude as the f64 textbook's, to within the
                    // f32 rounding of ||A|| (which is of their own order at
                    // n = 512: up to 50% was measured).
                    let ratio = d / hr[j * n + j].abs();
                    assert!(
                        (0.25..=4.0).contains(&ratio),
                        "{spec}: R[{j}][{j}] ratio {ratio}"
                    );
                    if j + 1 < n {
                        assert!(tau[j] > 0.0, "{spec}: tau[{j}]");
                    }
                }
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn rankdef_64() {
    check_shape(Case::Rankdef, 64);
}

#[test]
fn rankdef_512() {
    check_shape(Case::Rankdef, 512);
}

#[test]
fn nearrank_64() {
    check_shape(Case::Nearrank, 64);
}

#[test]
fn nearrank_512() {
    check_shape(Case::Nearrank, 512);
}
