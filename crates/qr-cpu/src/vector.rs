//! Vector loops shared by the unblocked and panel kernels.
//!
//! All are `#[inline(always)]` so that they are compiled inside the
//! multiversioned entry points (see `isa.rs`). Reductions keep several
//! independent partial sums in a fixed-size array: that is what lets the
//! compiler vectorize them without reassociating floating-point sums.

/// Partial sums per reduction: two AVX-512 registers of `f32`.
const LANES: usize = 32;

/// `sum x[i] * y[i]` over the common length.
#[inline(always)]
pub(crate) fn dot(x: &[f32], y: &[f32]) -> f32 {
    let len = x.len().min(y.len());
    let (x, y) = (&x[..len], &y[..len]);
    let xs = x.chunks_exact(LANES);
    let ys = y.chunks_exact(LANES);
    let tail: f32 = xs
        .remainder()
        .iter()
        .zip(ys.remainder())
        .map(|(a, b)| a * b)
        .sum();
    let mut acc = [0.0f32; LANES];
    for (xc, yc) in xs.zip(ys) {
        for ((s, a), b) in acc.iter_mut().zip(xc).zip(yc) {
            *s += a * b;
        }
    }
    tree_sum(&mut acc) + tail
}

/// `sum x[i]^2` accumulated in `f64`: every square of an `f32` is exact in
/// `f64` and no sum of them can overflow or underflow there, which is what
/// makes the reflector norms safe over the whole `f32` range without the
/// scaling loop of LAPACK's `snrm2`.
#[inline(always)]
pub(crate) fn norm_sq_f64(x: &[f32]) -> f64 {
    const W: usize = LANES / 2;
    let xs = x.chunks_exact(W);
    let tail: f64 = xs
        .remainder()
        .iter()
        .map(|&a| f64::from(a) * f64::from(a))
        .sum();
    let mut acc = [0.0f64; W];
    for xc in xs {
        for (s, &a) in acc.iter_mut().zip(xc) {
            let a = f64::from(a);
            *s += a * a;
        }
    }
    let mut width = W;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0] + tail
}

/// `y[i] += alpha * x[i]` over the common length.
#[inline(always)]
pub(crate) fn axpy(y: &mut [f32], alpha: f32, x: &[f32]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// `x[i] = x[i] * s`, the product formed in `f64` so that a scale factor
/// outside the `f32` range (a column of `1e-38`s) still gives the right `v`.
#[inline(always)]
pub(crate) fn scale_f64(x: &mut [f32], s: f64) {
    for xi in x.iter_mut() {
        *xi = (f64::from(*xi) * s) as f32;
    }
}

/// Pairwise sum of the partial sums (the order is fixed, so results do not
/// depend on the instruction set chosen).
#[inline(always)]
fn tree_sum(acc: &mut [f32; LANES]) -> f32 {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_match_plain_sums() {
        for len in [0usize, 1, 15, 31, 32, 33, 100] {
            let x: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let y: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let d: f64 = x.iter().zip(&y).map(|(a, b)| f64::from(a * b)).sum();
            assert!((f64::from(dot(&x, &y)) - d).abs() <= 1e-5 * (1.0 + d.abs()));
            let s: f64 = x.iter().map(|&a| f64::from(a) * f64::from(a)).sum();
            assert!((norm_sq_f64(&x) - s).abs() <= 1e-12 * (1.0 + s));
        }
    }

    #[test]
    fn norm_survives_extreme_scales() {
        let big = vec![3.0e38f32; 64];
        assert!((norm_sq_f64(&big).sqrt() / (8.0 * f64::from(3.0e38f32)) - 1.0).abs() < 1e-12);
        let tiny = vec![1.5e-38f32; 64];
        assert!((norm_sq_f64(&tiny).sqrt() / (8.0 * f64::from(1.5e-38f32)) - 1.0).abs() < 1e-6);
    }
}
