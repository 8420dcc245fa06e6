//! The gate's own `Q`: the product of the reflectors in `(H, tau)`, formed
//! in `f64` independently of any backend.
//!
//! Blocked as LAPACK's `dorgqr` is: reflectors are grouped `NB` at a time
//! into a compact-WY block `I - V T V^T` (`T` by the `larft` recurrence) and
//! applied from the last block to the first, so that block `k` only touches
//! `Q[k.., k..]` and every flop is a faer matrix product. `n = 4096` takes
//! seconds where the reflector-by-reflector product takes minutes.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};

/// Reflectors per compact-WY block; docs/perf/qr-verify.md, table
/// "householder_product block size", measured on the 2-core dev host.
const NB: usize = 128;

/// `Q = H_0 H_1 ... H_{n-1}` of one matrix, row-major `n x n`, in `f64`,
/// from its `geqrf` outputs `h` (row-major `n x n`; only the part strictly
/// below the diagonal is read) and `tau` (`n` values).
///
/// Lengths that do not match `n` give a `Q` filled with NaN, which no check
/// passes. Uses the global rayon pool.
pub fn householder_product(n: usize, h: &[f32], tau: &[f32]) -> Vec<f64> {
    if h.len() != n * n || tau.len() != n {
        return vec![f64::NAN; n * n];
    }
    let hm = Mat::from_fn(n, n, |i, j| f64::from(h[i * n + j]));
    let tau: Vec<f64> = tau.iter().map(|&t| f64::from(t)).collect();
    let q = q_from_reflectors(hm.as_ref(), &tau, Par::rayon(0));
    let mut out = vec![0.0; n * n];
    for (i, row) in out.chunks_exact_mut(n.max(1)).enumerate().take(n) {
        for (j, x) in row.iter_mut().enumerate() {
            *x = q[(i, j)];
        }
    }
    out
}

/// [`householder_product`] on `f64` data in faer's layout: `h` is `n x n`
/// (strictly lower part read), `tau` has `n` entries.
pub(crate) fn q_from_reflectors(h: MatRef<'_, f64>, tau: &[f64], par: Par) -> Mat<f64> {
    let n = h.nrows();
    debug_assert!(h.ncols() == n && tau.len() == n);
    let mut q = Mat::<f64>::identity(n, n);
    let starts: Vec<usize> = (0..n).step_by(NB).collect();
    for &k in starts.iter().rev() {
        let kb = NB.min(n - k);
        let m = n - k;
        let v = Mat::from_fn(m, kb, |i, c| match i.cmp(&c) {
            std::cmp::Ordering::Equal => 1.0,
            std::cmp::Ordering::Greater => h[(k + i, k + c)],
            std::cmp::Ordering::Less => 0.0,
        });
        let t = larft(v.as_ref(), &tau[k..k + kb], par);
        apply_block_reflector_left(
            v.as_ref(),
            t.as_ref(),
            q.as_mut().submatrix_mut(k, k, m, m),
            par,
        );
    }
    q
}

/// The upper-triangular `T` with `H_0 ... H_{kb-1} = I - V T V^T` for the
/// unit lower-trapezoidal `v` (`m x kb`), LAPACK's forward column-wise `larft`.
pub(crate) fn larft(v: MatRef<'_, f64>, tau: &[f64], par: Par) -> Mat<f64> {
    let kb = v.ncols();
    let mut g = Mat::<f64>::zeros(kb, kb);
    matmul(g.as_mut(), Accum::Replace, v.transpose(), v, 1.0, par);
    let mut t = Mat::<f64>::zeros(kb, kb);
    for c in 0..kb {
        // T[..c, c] = -tau_c T[..c, ..c] (V[:, ..c]^T v_c), T upper triangular.
        for r in 0..c {
            let dot: f64 = (r..c).map(|l| t[(r, l)] * g[(l, c)]).sum();
            t[(r, c)] = -tau[c] * dot;
        }
        t[(c, c)] = tau[c];
    }
    t
}

/// `c = (I - V T V^T) c` for `v` (`m x kb`), `t` (`kb x kb`), `c` (`m x p`).
pub(crate) fn apply_block_reflector_left(
    v: MatRef<'_, f64>,
    t: MatRef<'_, f64>,
    mut c: MatMut<'_, f64>,
    par: Par,
) {
    let (kb, p) = (v.ncols(), c.ncols());
    let mut w = Mat::<f64>::zeros(kb, p);
    matmul(
        w.as_mut(),
        Accum::Replace,
        v.transpose(),
        c.as_ref(),
        1.0,
        par,
    );
    let mut tw = Mat::<f64>::zeros(kb, p);
    matmul(tw.as_mut(), Accum::Replace, t, w.as_ref(), 1.0, par);
    matmul(c.as_mut(), Accum::Add, v, tw.as_ref(), -1.0, par);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Q` reflector by reflector, the definition, for comparison.
    fn q_unblocked(n: usize, h: &[f32], tau: &[f32]) -> Vec<f64> {
        let mut q = vec![0.0; n * n];
        for i in 0..n {
            q[i * n + i] = 1.0;
        }
        // Q = H_0 ... H_{n-1}: apply H_j on the right, j ascending: Q -= tau (Q v) v^T.
        for j in 0..n {
            let v: Vec<f64> = (0..n)
                .map(|i| match i.cmp(&j) {
                    std::cmp::Ordering::Less => 0.0,
                    std::cmp::Ordering::Equal => 1.0,
                    std::cmp::Ordering::Greater => f64::from(h[i * n + j]),
                })
                .collect();
            for row in q.chunks_exact_mut(n) {
                let qv: f64 = row.iter().zip(&v).map(|(a, b)| a * b).sum();
                for (x, vi) in row.iter_mut().zip(&v) {
                    *x -= f64::from(tau[j]) * qv * vi;
                }
            }
        }
        q
    }

    fn reflectors(n: usize, seed: u32) -> (Vec<f32>, Vec<f32>) {
        // A cheap deterministic pseudo-random fill; tau = 2 / (v^T v) makes
        // every H_j an exact reflector, with a few identities mixed in.
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state as f32 / u32::MAX as f32) - 0.5
        };
        let h: Vec<f32> = (0..n * n).map(|_| next()).collect();
        let tau = (0..n)
            .map(|j| {
                let ss: f32 = (j + 1..n).map(|i| h[i * n + j].powi(2)).sum();
                if j % 7 == 3 { 0.0 } else { 2.0 / (1.0 + ss) }
            })
            .collect();
        (h, tau)
    }

    #[test]
    fn blocked_equals_definition_across_block_edges() {
        for n in [0, 1, 2, 5, NB - 1, NB, NB + 1, 2 * NB + 3] {
            let (h, tau) = reflectors(n, n as u32 + 1);
            let q = householder_product(n, &h, &tau);
            let want = q_unblocked(n, &h, &tau);
            let err = q
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-12, "n = {n}: {err}");
        }
    }

    #[test]
    fn exact_reflectors_give_an_orthogonal_q() {
        let n = 150;
        let (h, tau) = reflectors(n, 9);
        let q = householder_product(n, &h, &tau);
        let mut worst = 0.0f64;
        for a in 0..n {
            for b in 0..n {
                let dot: f64 = (0..n).map(|i| q[i * n + a] * q[i * n + b]).sum();
                let want = if a == b { 1.0 } else { 0.0 };
                worst = worst.max((dot - want).abs());
            }
        }
        // tau is rounded to f32, so H_j is orthogonal to about f32 accuracy.
        assert!(worst < 1e-5, "{worst}");
    }

    #[test]
    fn wrong_lengths_give_nan() {
        let q = householder_product(3, &[0.0; 8], &[0.0; 3]);
        assert_eq!(q.len(), 9);
        assert!(q.iter().all(|x| x.is_nan()));
        assert!(householder_product(2, &[0.0; 4], &[0.0; 1])[0].is_nan());
    }
}
