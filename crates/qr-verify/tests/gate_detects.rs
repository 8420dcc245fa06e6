//! The gate itself: it passes a correct factorization and fails wrong ones,
//! each matrix of a batch on its own merits.

mod support;

use qr_verify::{Case, MatrixGate, Spec, check};
use support::{Reference, run};

fn spec(batch: usize, n: usize) -> Spec {
    Spec {
        batch,
        n,
        cond: 1.0,
        case: Case::Dense,
    }
}

#[test]
fn a_correct_factorization_meets_the_bar() {
    for n in [1, 2, 17, 64, 130] {
        let r = run(&Reference, &spec(3, n), 1);
        assert!(
            r.report.meets_bar(),
            "n = {n}: {}",
            support::describe(&r.report)
        );
        // Rounding an exact f64 factorization to f32 leaves sfr and orth of
        // order 1 (a few ulps per entry), far inside the bar.
        assert!(r.report.worst_sfr() < 1.0 && r.report.worst_orth() < 1.0);
        for m in &r.report.matrices {
            assert!(m.recon < 1.0 && m.leakage < 1.0, "{m:?}");
        }
    }
}

/// Gates a copy of the factorization of `spec` after `damage`, returning
/// the gate of matrix 1 (the damaged one) and of matrices 0 and 2.
fn damaged(
    n: usize,
    damage: impl Fn(&mut [f32], &mut [f32], usize),
) -> (MatrixGate, [MatrixGate; 2]) {
    let r = run(&Reference, &spec(3, n), 2);
    let (mut h, mut tau) = (r.f.h.clone(), r.f.tau.clone());
    damage(&mut h[n * n..2 * n * n], &mut tau[n..2 * n], n);
    let m = check(r.shape, &r.a, &h, &tau).unwrap().matrices;
    assert!(
        m[0].meets_bar() && m[2].meets_bar(),
        "undamaged matrices must pass"
    );
    (m[1], [m[0], m[2]])
}

#[test]
fn a_perturbed_reflector_fails() {
    let n = 40;
    // One entry of v below the diagonal: Q stays orthogonal (tau no longer
    // matches v, so not quite) but no longer maps A to R.
    let (g, _) = damaged(n, |h, _, n| h[20 * n + 5] += 1e-3);
    assert!(!g.passes_gate(), "{g:?}");
}

#[test]
fn a_perturbed_r_fails_on_the_residual_only() {
    let n = 40;
    let (g, _) = damaged(n, |h, _, n| h[3 * n + 30] += 1e-3 * h[0].abs());
    assert!(!g.passes_gate() && g.sfr > 20.0, "{g:?}");
    assert!(g.orth <= 1.0, "R does not enter orth: {g:?}");
}

#[test]
fn a_small_residual_error_fails_the_bar_but_not_the_gate() {
    // ||A||_1 n eps sets the scale: an error of 10 units in R's 1-norm is sfr 10.
    let n = 64;
    let r = run(&Reference, &spec(1, n), 3);
    let anorm = (0..n)
        .map(|j| (0..n).map(|i| f64::from(r.a[i * n + j]).abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let mut h = r.f.h.clone();
    let unit = anorm * n as f64 * qr_core::EPS_F32;
    h[10 * n + 50] += (10.0 * unit) as f32;
    let g = check(r.shape, &r.a, &h, &r.f.tau).unwrap().matrices[0];
    assert!(g.passes_gate() && !g.meets_bar(), "{g:?}");
    assert!((g.sfr - 10.0).abs() < 1.0, "{g:?}");
}

#[test]
fn a_wrong_tau_fails() {
    let n = 40;
    let (g, _) = damaged(n, |_, tau, _| tau[7] *= 1.01);
    assert!(!g.passes_gate() && g.orth > 100.0, "{g:?}");
    // tau = 0 where a reflector was needed: Q orthogonal, R wrong.
    let (g, _) = damaged(n, |_, tau, _| tau[7] = 0.0);
    assert!(!g.passes_gate() && g.sfr > 20.0 && g.orth < 1.0, "{g:?}");
}

#[test]
fn a_sign_flip_of_one_row_of_r_fails() {
    // Negating row 4 of R alone is not a factorization (it would need the
    // matching column of Q negated too, which (H, tau) cannot express here).
    let n = 30;
    let (g, _) = damaged(n, |h, _, n| {
        (4..n).for_each(|j| h[4 * n + j] = -h[4 * n + j])
    });
    assert!(!g.passes_gate(), "{g:?}");
}

#[test]
fn non_finite_outputs_fail() {
    let n = 12;
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let (g, _) = damaged(n, |h, _, n| h[5 * n + 2] = bad);
        assert!(!g.passes_gate() && g.sfr.is_infinite(), "{bad}: {g:?}");
        let (g, _) = damaged(n, |_, tau, _| tau[3] = bad);
        assert!(!g.passes_gate(), "{bad}: {g:?}");
        // Above the diagonal, in R.
        let (g, _) = damaged(n, |h, _, n| h[2 * n + 9] = bad);
        assert!(!g.passes_gate(), "{bad}: {g:?}");
    }
}

#[test]
fn a_swapped_matrix_fails_alone() {
    let n = 20;
    let r = run(&Reference, &spec(3, n), 4);
    let mut h = r.f.h.clone();
    let mut tau = r.f.tau.clone();
    h.copy_within(0..n * n, 2 * n * n);
    tau.copy_within(0..n, 2 * n);
    let m = check(r.shape, &r.a, &h, &tau).unwrap().matrices;
    assert!(m[0].passes_gate() && m[1].passes_gate() && !m[2].passes_gate());
}

#[test]
fn the_input_as_h_fails() {
    // A backend that returned its input with tau = 0 claims Q = I, R = triu(A).
    let n = 16;
    let r = run(&Reference, &spec(1, n), 5);
    let g = check(r.shape, &r.a, &r.a, &vec![0.0; n]).unwrap().matrices[0];
    assert!(!g.passes_gate() && g.leakage > 20.0, "{g:?}");
}
