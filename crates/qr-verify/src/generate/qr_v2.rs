//! The `qr_v2` distributions (DESIGN section 2), one matrix at a time.
//!
//! Each starts from `randn(n, n)` as the leaderboard's generator does and
//! then shapes it by case; constants and orders follow that generator.

use qr_core::EPS_F32;
use rand_chacha::ChaCha8Rng;

use super::{Case, linspace, logspace_down, randn};

/// One row-major `n x n` matrix of `case` (a single `qr_v2` profile).
pub(super) fn generate(case: Case, n: usize, cond: f64, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let mut a = randn(n * n, rng);
    match case {
        Case::Dense => scale_columns(&mut a, n, cond),
        Case::Upper => {
            let d = linspace(1.0, 0.25, n);
            for i in 0..n {
                a[i * n..i * n + i].fill(0.0);
                a[i * n + i] += d[i];
            }
            scale_columns(&mut a, n, cond);
        }
        Case::Diagonal => {
            let d = logspace_down(cond.max(2.0), n);
            a.fill(0.0);
            for (i, di) in d.into_iter().enumerate() {
                let sign = if rand::Rng::random::<bool>(rng) {
                    1.0
                } else {
                    -1.0
                };
                a[i * n + i] = sign * di;
            }
        }
        Case::Rankdef => {
            let r = rank_split(n);
            for row in a.chunks_exact_mut(n) {
                row[r..].fill(0.0);
            }
            scale_columns(&mut a, n, cond);
        }
        Case::Nearrank => {
            let r = rank_split(n);
            let t = n - r;
            let noise = randn(n * t, rng);
            for (row, noise) in a.chunks_exact_mut(n).zip(noise.chunks_exact(t.max(1))) {
                for k in 0..t {
                    row[r + k] = row[k] + 1e-5 * noise[k];
                }
            }
            scale_columns(&mut a, n, cond);
        }
        Case::Clustered => {
            let mut s = vec![1.0; n];
            s[n / 2..].fill(4.0 * EPS_F32);
            if n >= 8 {
                s[n / 2 - 2..n / 2 + 2].fill(EPS_F32.sqrt());
            }
            multiply_columns(&mut a, &s);
        }
        Case::Band => {
            let bw = (n / 32).clamp(2, 32);
            let d = linspace(1.0, 0.5, n);
            for (i, row) in a.chunks_exact_mut(n).enumerate() {
                for (j, x) in row.iter_mut().enumerate() {
                    if i.abs_diff(j) > bw {
                        *x = 0.0;
                    }
                }
                row[i] += d[i];
            }
            scale_columns(&mut a, n, cond);
        }
        Case::Nearcollinear => {
            let base = randn(n, rng);
            for (row, b) in a.chunks_exact_mut(n).zip(base) {
                for x in row.iter_mut() {
                    *x = b + 1e-4 * *x;
                }
            }
            scale_columns(&mut a, n, cond);
        }
        Case::Rowscale => {
            let s = logspace_down(cond.max(4.0), n);
            for (row, si) in a.chunks_exact_mut(n).zip(s) {
                row.iter_mut().for_each(|x| *x *= si);
            }
        }
        Case::Mixed | Case::Lapack(_) => unreachable!("not a qr_v2 profile: {case}"),
    }
    a
}

/// The rank (number of leading independent columns) of rankdef and nearrank.
fn rank_split(n: usize) -> usize {
    (3 * n / 4).max(1).min(n)
}

/// Columns times `logspace(0, -cond, n)`; `cond == 0` leaves `a` unchanged.
fn scale_columns(a: &mut [f64], n: usize, cond: f64) {
    if cond != 0.0 {
        multiply_columns(a, &logspace_down(cond, n));
    }
}

fn multiply_columns(a: &mut [f64], s: &[f64]) {
    for row in a.chunks_exact_mut(s.len()) {
        row.iter_mut().zip(s).for_each(|(x, s)| *x *= s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn draw(case: Case, n: usize, cond: f64) -> Vec<f64> {
        generate(case, n, cond, &mut ChaCha8Rng::seed_from_u64(3))
    }

    #[test]
    fn structure_of_each_case() {
        let n = 64;
        let at = |a: &[f64], i: usize, j: usize| a[i * n + j];

        let u = draw(Case::Upper, n, 0.0);
        assert!((0..n).all(|i| (0..i).all(|j| at(&u, i, j) == 0.0)));

        let d = draw(Case::Diagonal, n, 0.0);
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    assert_eq!(at(&d, i, j), 0.0);
                }
            }
        }
        assert!((at(&d, n - 1, n - 1).abs() - 0.01).abs() < 1e-12);

        let r = draw(Case::Rankdef, n, 0.0);
        assert!((0..n).all(|i| (48..n).all(|j| at(&r, i, j) == 0.0)));
        assert!((0..n).any(|i| at(&r, i, 47) != 0.0));

        let nr = draw(Case::Nearrank, n, 0.0);
        for i in 0..n {
            let gap = (at(&nr, i, 48) - at(&nr, i, 0)).abs();
            assert!(gap < 1e-3 && gap > 0.0, "row {i}: {gap}");
        }

        let c = draw(Case::Clustered, n, 0.0);
        assert!((0..n).all(|i| at(&c, i, 40).abs() < 10.0 * 4.0 * EPS_F32));
        let col30 = (0..n).map(|i| at(&c, i, 30).abs()).fold(0.0, f64::max);
        assert!(col30 < 10.0 * EPS_F32.sqrt() && col30 > 4.0 * EPS_F32);

        let b = draw(Case::Band, n, 0.0);
        assert!((0..n).all(|i| (0..n).all(|j| i.abs_diff(j) <= 2 || at(&b, i, j) == 0.0)));

        let nc = draw(Case::Nearcollinear, n, 0.0);
        assert!((0..n).all(|i| (at(&nc, i, 0) - at(&nc, i, 9)).abs() < 1e-2));

        let rs = draw(Case::Rowscale, n, 0.0);
        let last = (0..n).map(|j| at(&rs, n - 1, j).abs()).fold(0.0, f64::max);
        assert!(last < 1e-3, "last row {last}");
    }

    #[test]
    fn column_scaling_follows_cond() {
        let n = 16;
        let plain = draw(Case::Dense, n, 0.0);
        let scaled = draw(Case::Dense, n, 3.0);
        for i in 0..n {
            assert_eq!(plain[i * n], scaled[i * n]);
            let ratio = scaled[i * n + n - 1] / plain[i * n + n - 1];
            assert!((ratio - 1e-3).abs() < 1e-15, "{ratio}");
        }
    }

    #[test]
    fn tiny_orders_do_not_panic() {
        for case in Case::ALL_QR_V2.iter().filter(|&&c| c != Case::Mixed) {
            for n in 1..10 {
                assert_eq!(draw(*case, n, 1.0).len(), n * n);
            }
        }
    }
}
