//! `Info::OVERFLOW` is for matrices whose `R` does not fit `f32`, not for
//! those whose `f32` intermediates overflow (issue 30): matrices of entries
//! near `f32::MAX / 4` factor, checked in `f64`, on every path; those whose
//! `R` has an entry beyond `f32::MAX` are flagged.

use qr_core::{Info, Shape, geqrf};
use qr_cpu::{CpuBackend, Tuning};

const MAX: f32 = f32::MAX;

/// Tunings that send orders 2 to 16 through the unblocked, blocked,
/// recursive-panel and inner-parallel paths.
fn backends() -> Vec<(&'static str, CpuBackend)> {
    let t = |small_n, block, panel_leaf, batch_parallel_min| Tuning {
        small_n,
        block,
        panel_leaf,
        batch_parallel_min,
        batch_parallel_min_work: 0,
        par_update_min_cols: 1,
        ..Tuning::default()
    };
    vec![
        ("default", CpuBackend::new()),
        ("blocked-nb4", CpuBackend::with_tuning(t(0, 4, 4, 2))),
        ("blocked-nb8-leaf2", CpuBackend::with_tuning(t(0, 8, 2, 2))),
        (
            "inner-parallel",
            CpuBackend::with_tuning(t(0, 3, 1, usize::MAX)),
        ),
    ]
}

/// A "new user's" matrix: entries `±(MAX / 4) (0.9 + 0.1 u)`, `u` uniform
/// from a 64-bit LCG (Knuth's MMIX constants), sign from the next bit.
/// Largest column norms about `0.69 MAX` at `n = 8` and `0.97 MAX` at
/// `n = 16`. docs/RELIABILITY.md runs the same generator through OpenBLAS.
fn near_max_over_4(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n * n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 40) as f64 / (1u64 << 24) as f64;
            let x = (f64::from(MAX) / 4.0 * (0.9 + 0.1 * u)) as f32;
            if (s >> 39) & 1 == 1 { -x } else { x }
        })
        .collect()
}

/// `(||A - QR||_F / ||A||_F, ||I - Q^T Q||_F) / (n eps)`, with `Q` formed in
/// `f64` from the reflectors.
fn f64_ratios(n: usize, a: &[f32], h: &[f32], tau: &[f32]) -> (f64, f64) {
    // Q = H_0 H_1 ... H_{n-1}, applied to the identity from the right.
    let mut q = vec![0.0f64; n * n];
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    for j in 0..n {
        let t = f64::from(tau[j]);
        let v: Vec<f64> = (0..n)
            .map(|i| match i.cmp(&j) {
                std::cmp::Ordering::Less => 0.0,
                std::cmp::Ordering::Equal => 1.0,
                std::cmp::Ordering::Greater => f64::from(h[i * n + j]),
            })
            .collect();
        for r in 0..n {
            let w: f64 = (0..n).map(|c| q[r * n + c] * v[c]).sum();
            for c in 0..n {
                q[r * n + c] -= t * w * v[c];
            }
        }
    }
    let (mut res, mut anorm, mut orth) = (0.0f64, 0.0f64, 0.0f64);
    for r in 0..n {
        for c in 0..n {
            let qr: f64 = (0..=c)
                .map(|k| q[r * n + k] * f64::from(h[k * n + c]))
                .sum();
            let x = f64::from(a[r * n + c]);
            res += (x - qr).powi(2);
            anorm += x * x;
            let qtq: f64 = (0..n).map(|k| q[k * n + r] * q[k * n + c]).sum();
            orth += (qtq - f64::from(u8::from(r == c))).powi(2);
        }
    }
    let unit = n as f64 * f64::from(f32::EPSILON);
    ((res / anorm).sqrt() / unit, orth.sqrt() / unit)
}

fn factor(backend: &CpuBackend, batch: usize, n: usize, a: &[f32]) -> qr_core::Factorization {
    geqrf(backend, Shape::new(batch, n).unwrap(), a).unwrap()
}

fn assert_factored(what: &str, n: usize, a: &[f32], f: &qr_core::Factorization) {
    assert_eq!(f.info, [Info::OK], "{what}");
    assert!(
        f.h.iter().chain(&f.tau).all(|x| x.is_finite()),
        "{what}: non-finite output"
    );
    let (res, orth) = f64_ratios(n, a, &f.h, &f.tau);
    assert!(
        res <= 5.0 && orth <= 5.0,
        "{what}: residual {res}, orth {orth}"
    );
}

/// The matrices, seeds 0..20 at each order: OpenBLAS 0.3.30's
/// `sgeqrf` returns infinities for 6 of the 20 at `n = 8` and all 20 at
/// `n = 16`; the `f32` pass here overflowed on 1 and 9 of them.
#[test]
fn entries_near_max_over_four_factor() {
    for (name, backend) in backends() {
        for n in [8, 16] {
            for seed in 0..20 {
                let a = near_max_over_4(n, seed);
                let f = factor(&backend, 1, n, &a);
                assert_factored(&format!("{name} n={n} seed={seed}"), n, &a, &f);
            }
        }
    }
}

/// A column norm above `f32::MAX` is not by itself an overflow: `A = Q R`
/// with `Q` a rotation and `|R| <= 0.9 MAX` has a second column of norm
/// `1.03 MAX`. The first reflector's update `tau (v^T a)` is `1.32 MAX`.
#[test]
fn column_norm_above_max_with_r_inside_factors() {
    let a = [0.4 * MAX, 0.42 * MAX, 0.3 * MAX, 0.94 * MAX];
    for (name, backend) in backends() {
        let f = factor(&backend, 1, 2, &a);
        assert_factored(name, 2, &a, &f);
        let r01 = f64::from(f.h[1]) / f64::from(MAX);
        assert!((r01 + 0.9).abs() < 1e-6, "{name}: R[0][1] = {r01} MAX");
    }
}

/// An `R` entry beyond `f32::MAX` is `OVERFLOW`, NaN-filled, whichever
/// column it is in; its neighbours in the batch (one of them through the
/// scaled retry) are bit for bit what they are alone.
#[test]
fn r_beyond_max_is_flagged_alone() {
    let n = 8;
    let len = n * n;
    // R[0][0] = -sqrt(2) MAX; then R[0][1] = -1.13 MAX behind a first column that fits.
    let first = [MAX, 1.0, MAX, 1.0];
    let later = [1.0, 0.8 * MAX, 1.0, 0.8 * MAX];
    for (name, backend) in backends() {
        for a in [first, later] {
            let f = factor(&backend, 1, 2, &a);
            assert_eq!(f.info, [Info::OVERFLOW], "{name}: {a:?}");
            assert!(f.h.iter().chain(&f.tau).all(|x| x.is_nan()), "{name}");
        }
        // A 8 x 8 matrix whose last column is MAX / 2 everywhere (norm 1.41 MAX).
        let mut bad = near_max_over_4(n, 1);
        for i in 0..n {
            bad[i * n + n - 1] = MAX / 2.0;
        }
        let mut batch = near_max_over_4(n, 14);
        batch.extend(&bad);
        batch.extend((0..len).map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0));
        let f = factor(&backend, 3, n, &batch);
        assert_eq!(f.info, [Info::OK, Info::OVERFLOW, Info::OK], "{name}");
        assert!(
            f.h[len..2 * len]
                .iter()
                .chain(&f.tau[n..2 * n])
                .all(|x| x.is_nan()),
            "{name}"
        );
        for b in [0, 2] {
            let alone = factor(&backend, 1, n, &batch[b * len..(b + 1) * len]);
            let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&alone.h),
                bits(&f.h[b * len..(b + 1) * len]),
                "{name} {b}"
            );
            assert_eq!(
                bits(&alone.tau),
                bits(&f.tau[b * n..(b + 1) * n]),
                "{name} {b}"
            );
        }
    }
}

/// The scaled retry keeps which entries are zero: a subnormal below the
/// diagonal of column 0 still gives a reflector (`tau[0] = 2`, as without
/// scaling), although `2^-149` scaled down is zero.
#[test]
fn scaled_retry_keeps_the_zero_pattern() {
    let tiny = f32::from_bits(1);
    #[rustfmt::skip]
    let a = [
        1.0, 0.0, 0.0,
        tiny, 0.4 * MAX, 0.42 * MAX,
        0.0, 0.3 * MAX, 0.94 * MAX,
    ];
    for (name, backend) in backends() {
        let f = factor(&backend, 1, 3, &a);
        assert_eq!(f.info, [Info::OK], "{name}");
        assert_eq!(f.tau[0], 2.0, "{name}: tau {:?}", f.tau);
        assert!(f.h.iter().all(|x| x.is_finite()), "{name}");
        let (res, orth) = f64_ratios(3, &a, &f.h, &f.tau);
        assert!(
            res <= 5.0 && orth <= 5.0,
            "{name}: residual {res}, orth {orth}"
        );
    }
}
