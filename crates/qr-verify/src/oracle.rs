//! An outside opinion on `R`: `|diag R|` against nalgebra's `f64` QR.
//!
//! `|R_ii|` is the same for every Householder QR of a matrix (it is the norm
//! of column `i`'s component orthogonal to the earlier columns), whatever the
//! sign convention, so it can be compared with a library that shares no code
//! or convention with this project.

use nalgebra::DMatrix;

use crate::gate::nan_max;

/// `max_i | |R_ii| - |R*_ii| | / max_j |R*_jj|`, where `R = triu(h)` comes
/// from the backend and `R*` from nalgebra's `f64` QR of `a` (both
/// row-major `n x n`).
///
/// NaN (never a pass) when a length does not match `n` or a diagonal entry
/// of `h` is not finite; 0 for `n = 0` or an all-zero `R*` matched exactly.
pub fn diag_r_mismatch(n: usize, a: &[f32], h: &[f32]) -> f64 {
    if a.len() != n * n || h.len() != n * n {
        return f64::NAN;
    }
    let m = DMatrix::from_fn(n, n, |i, j| f64::from(a[i * n + j]));
    let reference = m.qr().r();
    let want: Vec<f64> = (0..n).map(|i| reference[(i, i)].abs()).collect();
    let scale = nan_max(want.iter().copied());
    let worst = nan_max(
        want.iter()
            .enumerate()
            .map(|(i, w)| (f64::from(h[i * n + i]).abs() - w).abs()),
    );
    if scale > 0.0 {
        worst / scale
    } else if worst == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{Case, Spec, generate};
    use crate::reference::geqr2_f64;

    #[test]
    fn agrees_with_the_reference_and_catches_a_change() {
        let n = 30;
        let spec = Spec {
            batch: 1,
            n,
            cond: 0.0,
            case: Case::Dense,
        };
        let a = generate(&spec, 11);
        let wide: Vec<f64> = a.iter().map(|&x| f64::from(x)).collect();
        let (h, _) = geqr2_f64(n, &wide);
        let mut h: Vec<f32> = h.iter().map(|&x| x as f32).collect();
        assert!(diag_r_mismatch(n, &a, &h) < 1e-6);
        h[7 * n + 7] *= 1.01;
        assert!(diag_r_mismatch(n, &a, &h) > 1e-4);
        h[7 * n + 7] = f32::NAN;
        assert!(diag_r_mismatch(n, &a, &h).is_nan());
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(diag_r_mismatch(0, &[], &[]), 0.0);
        assert_eq!(diag_r_mismatch(2, &[0.0; 4], &[0.0; 4]), 0.0);
        assert_eq!(
            diag_r_mismatch(2, &[0.0; 4], &[1.0, 0.0, 0.0, 0.0]),
            f64::INFINITY
        );
        assert!(diag_r_mismatch(2, &[0.0; 3], &[0.0; 4]).is_nan());
    }
}
