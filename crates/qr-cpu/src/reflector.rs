//! One elementary reflector, by LAPACK `slarfg`'s rules.
//!
//! For `x = [alpha; x1]` with `xnorm = ||x1||`:
//! - `xnorm == 0`: no reflector (`tau = 0`, `H = I`), `x` is left as it is;
//! - otherwise `beta = -copysign(hypot(alpha, xnorm), alpha)`,
//!   `tau = (beta - alpha) / beta` and `v1 = x1 / (alpha - beta)`.
//!
//! The arithmetic is done in `f64` from the exact `f64` sum of squares, then
//! rounded once, so no intermediate overflows or underflows for any finite
//! `f32` input and `tau` is the correctly rounded value of the formula.

use crate::vector::{norm_sq_f64, scale_f64};

/// The scalars of one reflector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Reflector {
    /// The new diagonal entry `R[j][j]`.
    pub beta: f32,
    /// `tau` in `H = I - tau v v^T`, in `(0, 2]`.
    pub tau: f32,
    /// `1 / (alpha - beta)`: `v1 = x1 * scale`.
    pub scale: f64,
}

/// The reflector for `alpha` and `xnorm_sq = ||x1||^2`, or `None` when
/// `x1` is exactly zero (then `tau = 0` and `R[j][j] = alpha`).
#[inline(always)]
pub(crate) fn reflector(alpha: f32, xnorm_sq: f64) -> Option<Reflector> {
    if xnorm_sq == 0.0 {
        return None;
    }
    let alpha = f64::from(alpha);
    // `alpha^2 + xnorm^2` is exact enough in f64 and cannot overflow there,
    // so a plain square root is the hypot of the contract.
    let beta = -(alpha * alpha + xnorm_sq).sqrt().copysign(alpha);
    Some(Reflector {
        beta: beta as f32,
        tau: ((beta - alpha) / beta) as f32,
        scale: 1.0 / (alpha - beta),
    })
}

/// Turns the contiguous column `x = [alpha; x1]` into `[beta; v1]` and
/// returns `tau` (`0` with `x` untouched when `x1` is exactly zero).
#[inline(always)]
pub(crate) fn reflect_contiguous(x: &mut [f32]) -> f32 {
    let Some((alpha, x1)) = x.split_first_mut() else {
        return 0.0;
    };
    match reflector(*alpha, norm_sq_f64(x1)) {
        None => 0.0,
        Some(r) => {
            scale_f64(x1, r.scale);
            *alpha = r.beta;
            r.tau
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_sub_column_gives_no_reflector() {
        let mut x = [3.5f32, 0.0, -0.0, 0.0];
        assert_eq!(reflect_contiguous(&mut x).to_bits(), 0.0f32.to_bits());
        assert_eq!(x, [3.5, 0.0, -0.0, 0.0]);
        let mut one = [-2.0f32];
        assert_eq!(reflect_contiguous(&mut one), 0.0);
        assert_eq!(one, [-2.0]);
    }

    #[test]
    fn signs_follow_copysign() {
        let r = reflector(3.0, 16.0).unwrap();
        assert_eq!(r.beta, -5.0);
        assert_eq!(r.tau, 1.6);
        assert_eq!(r.scale, 1.0 / 8.0);
        let r = reflector(-3.0, 16.0).unwrap();
        assert_eq!(r.beta, 5.0);
        assert_eq!(r.tau, 1.6);
        // alpha = +0 takes the positive sign: beta = -xnorm, tau = 1.
        let r = reflector(0.0, 4.0).unwrap();
        assert_eq!((r.beta, r.tau), (-2.0, 1.0));
    }

    #[test]
    fn extreme_scales_do_not_overflow() {
        for s in [1.0e-30f32, 1.0e30, 1.5e-38, 1.0e37] {
            let mut x = [3.0 * s, 4.0 * s, 0.0];
            let tau = reflect_contiguous(&mut x);
            assert!((tau - 1.6).abs() < 1e-6, "scale {s}: tau {tau}");
            assert!(
                (x[0] / (-5.0 * s) - 1.0).abs() < 1e-6,
                "scale {s}: beta {}",
                x[0]
            );
            assert!((x[1] - 0.5).abs() < 1e-6, "scale {s}: v {}", x[1]);
        }
    }
}
