//! A textbook unblocked `geqrf` (LAPACK's `dgeqr2`) in `f64`: the reference
//! every backend's `(H, tau)` is compared with.
//!
//! One reflector per column, LAPACK's `dlarfg` rules: `tau = 0` exactly when
//! the sub-column below the diagonal is exactly zero, `beta` takes the
//! opposite sign of `alpha`, the sub-column norm is computed with scaling so
//! it neither overflows nor underflows, and a tiny `beta` is rescaled before
//! the reflector is formed.

/// `(H, tau)` of the row-major `n x n` matrix `a`: `H` row-major with `R` on
/// and above the diagonal and `v[1..]` below it, `tau` of length `n`.
///
/// A length of `a` other than `n * n` gives NaN-filled outputs of the right
/// sizes, which no comparison accepts.
pub fn geqr2_f64(n: usize, a: &[f64]) -> (Vec<f64>, Vec<f64>) {
    if a.len() != n * n {
        return (vec![f64::NAN; n * n], vec![f64::NAN; n]);
    }
    let mut h = a.to_vec();
    let mut tau = vec![0.0; n];
    let mut x = Vec::with_capacity(n);
    let mut w = vec![0.0; n];
    for j in 0..n {
        x.clear();
        x.extend((j..n).map(|i| h[i * n + j]));
        let reflector = larfg(&mut x);
        tau[j] = reflector.tau;
        h[j * n + j] = reflector.beta;
        for (i, &vi) in (j + 1..n).zip(&x[1..]) {
            h[i * n + j] = vi;
        }
        if reflector.tau == 0.0 {
            continue;
        }
        // A[j.., j+1..] -= tau v (v^T A[j.., j+1..]), row by row so that the
        // row-major matrix is read in order.
        let w = &mut w[j + 1..];
        w.fill(0.0);
        for (i, &vi) in (j..n).zip(std::iter::once(&1.0).chain(&x[1..])) {
            let row = &h[i * n + j + 1..(i + 1) * n];
            w.iter_mut().zip(row).for_each(|(w, a)| *w += vi * a);
        }
        for (i, &vi) in (j..n).zip(std::iter::once(&1.0).chain(&x[1..])) {
            let s = reflector.tau * vi;
            let row = &mut h[i * n + j + 1..(i + 1) * n];
            row.iter_mut().zip(w.iter()).for_each(|(a, w)| *a -= s * w);
        }
    }
    (h, tau)
}

/// One elementary reflector as `dlarfg` returns it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Reflector {
    /// The new diagonal entry (`alpha` itself when `tau == 0`).
    pub beta: f64,
    /// The scalar factor, in `[1, 2]` or exactly `0`.
    pub tau: f64,
}

/// Forms the reflector that maps `x` (`x[0] = alpha`) to `beta e_0`,
/// overwriting `x[1..]` with `v[1..]` (`v[0] = 1` implicit).
pub(crate) fn larfg(x: &mut [f64]) -> Reflector {
    let Some((&mut alpha, tail)) = x.split_first_mut() else {
        return Reflector {
            beta: 0.0,
            tau: 0.0,
        };
    };
    let mut xnorm = scaled_norm(tail);
    if xnorm == 0.0 {
        return Reflector {
            beta: alpha,
            tau: 0.0,
        };
    }
    let mut alpha = alpha;
    let mut beta = -alpha.hypot(xnorm).copysign(alpha);
    // dlarfg: when beta is below the safe minimum, 1/(alpha - beta) would
    // overflow; scale x up until it is not (at most 20 times), then undo it
    // on beta. No f32 input comes near this in f64, but the rule is the rule.
    let safmin = f64::MIN_POSITIVE / f64::EPSILON;
    let mut knt = 0;
    while beta.abs() < safmin && knt < 20 {
        knt += 1;
        tail.iter_mut().for_each(|v| *v /= safmin);
        beta /= safmin;
        alpha /= safmin;
    }
    if knt > 0 {
        xnorm = scaled_norm(tail);
        beta = -alpha.hypot(xnorm).copysign(alpha);
    }
    let tau = (beta - alpha) / beta;
    let scale = alpha - beta;
    tail.iter_mut().for_each(|v| *v /= scale);
    for _ in 0..knt {
        beta *= safmin;
    }
    Reflector { beta, tau }
}

/// `||x||_2` with scaling by the largest magnitude, so that no square
/// overflows or underflows (the job of LAPACK's `dnrm2`). NaN propagates.
pub(crate) fn scaled_norm(x: &[f64]) -> f64 {
    let scale = x.iter().fold(0.0f64, |m, v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v.abs())
        }
    });
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    scale * x.iter().map(|v| (v / scale).powi(2)).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{Case, Spec, generate};

    fn reconstruct(n: usize, h: &[f64], tau: &[f64]) -> Vec<f64> {
        // A = H_0 ... H_{n-1} R: apply the reflectors to R from the last.
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in i..n {
                a[i * n + j] = h[i * n + j];
            }
        }
        for k in (0..n).rev() {
            let v: Vec<f64> = (k..n)
                .map(|i| if i == k { 1.0 } else { h[i * n + k] })
                .collect();
            for c in 0..n {
                let d: f64 = (k..n).zip(&v).map(|(i, vi)| vi * a[i * n + c]).sum();
                for (i, vi) in (k..n).zip(&v) {
                    a[i * n + c] -= tau[k] * vi * d;
                }
            }
        }
        a
    }

    #[test]
    fn two_by_two_by_hand() {
        // Column (3, 4): beta = -5, tau = 8/5, v1 = 4 / (3 + 5) = 0.5.
        let (h, tau) = geqr2_f64(2, &[3.0, 1.0, 4.0, 2.0]);
        assert!((h[0] + 5.0).abs() < 1e-15);
        assert!((tau[0] - 1.6).abs() < 1e-15);
        assert!((h[2] - 0.5).abs() < 1e-15);
        let a = reconstruct(2, &h, &tau);
        for (x, y) in a.iter().zip([3.0, 1.0, 4.0, 2.0]) {
            assert!((x - y).abs() < 1e-14, "{a:?}");
        }
        assert_eq!(tau[1], 0.0, "a 1x1 trailing column has no sub-column");
    }

    #[test]
    fn reconstructs_and_follows_the_rules() {
        let n = 37;
        let spec = Spec {
            batch: 1,
            n,
            cond: 0.0,
            case: Case::Dense,
        };
        let mut a: Vec<f64> = generate(&spec, 4).into_iter().map(f64::from).collect();
        // Column 0 exactly zero below the diagonal must give tau = 0.
        for i in 1..n {
            a[i * n] = 0.0;
        }
        a[0] = -2.0;
        let (h, tau) = geqr2_f64(n, &a);
        assert_eq!(tau[0], 0.0, "exactly zero sub-column");
        assert_eq!(h[0], -2.0, "R[0][0] = alpha when tau = 0");
        assert!((1..n).all(|i| h[i * n] == 0.0));
        assert!(tau[1..n - 1].iter().all(|&t| (1.0..=2.0).contains(&t)));
        let back = reconstruct(n, &h, &tau);
        let err = back
            .iter()
            .zip(&a)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-13, "{err}");
    }

    #[test]
    fn sign_rule_and_extreme_scales() {
        for s in [1e-300, 1e-30, 1.0, 1e30, 1e300] {
            let mut x = vec![2.0 * s, s, s];
            let r = larfg(&mut x);
            assert!(
                r.beta < 0.0 && (r.beta / s + 6f64.sqrt()).abs() < 1e-14,
                "{s}: {r:?}"
            );
            let mut y = vec![-2.0 * s, s, s];
            assert!(larfg(&mut y).beta > 0.0);
        }
        // Subnormal scale: beta below the safe minimum is rescaled, not lost.
        let mut x = vec![3e-320, 4e-320];
        let r = larfg(&mut x);
        assert!((r.beta + 5e-320).abs() <= 1e-323, "{r:?}");
        assert!((r.tau - 1.6).abs() < 1e-2);
        assert!(scaled_norm(&[f64::NAN, 1.0]).is_nan());
        assert_eq!(scaled_norm(&[]), 0.0);
    }

    #[test]
    fn bad_length_is_nan() {
        let (h, tau) = geqr2_f64(2, &[1.0; 3]);
        assert!(h.len() == 4 && tau.len() == 2 && h[0].is_nan() && tau[0].is_nan());
        assert_eq!(geqr2_f64(0, &[]), (vec![], vec![]));
    }
}
