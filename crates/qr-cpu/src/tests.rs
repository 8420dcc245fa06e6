//! Crate tests: the backend against a textbook float64 `geqr2`, the
//! factorization gate on a float64 `Q`, and the convention's edge cases.
//! (qr-verify holds the full suite and the property tests.)

use qr_core::{Backend, BatchMut, BatchRef, EPS_F32, Info, QrError, Shape, geqrf};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use crate::{CpuBackend, Tuning};

/// Orders around the unblocked/blocked crossover and block boundaries.
const SIZES: [usize; 12] = [1, 2, 3, 31, 32, 33, 63, 64, 65, 100, 129, 200];

/// Tunings that between them send every size through every path.
fn tunings() -> Vec<(&'static str, Tuning)> {
    vec![
        ("default", Tuning::default()),
        (
            "all-blocked-nb8",
            Tuning {
                small_n: 0,
                block: 8,
                batch_parallel_min_work: 0,
                ..Tuning::default()
            },
        ),
        (
            "all-blocked-nb32",
            Tuning {
                small_n: 0,
                block: 32,
                ..Tuning::default()
            },
        ),
        (
            "all-unblocked",
            Tuning {
                small_n: usize::MAX,
                batch_parallel_min_work: 0,
                ..Tuning::default()
            },
        ),
        (
            "inner-parallel",
            Tuning {
                small_n: 16,
                block: 16,
                wide_block: 24,
                wide_block_min_n: 100,
                panel_leaf: 4,
                batch_parallel_min: usize::MAX,
                batch_parallel_min_work: 0,
                par_update_min_cols: 1,
            },
        ),
        (
            "column-loop-panels",
            Tuning {
                small_n: 0,
                block: 32,
                panel_leaf: 32,
                ..Tuning::default()
            },
        ),
        (
            "recursive-nb64-leaf8",
            Tuning {
                small_n: 0,
                block: 64,
                panel_leaf: 8,
                ..Tuning::default()
            },
        ),
    ]
}

fn randn(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len)
        .map(|_| rng.sample::<f32, _>(StandardNormal))
        .collect()
}

/// Textbook unblocked Householder QR in float64, LAPACK's rules, row-major.
fn geqr2_f64(n: usize, a: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut h = a.to_vec();
    let mut tau = vec![0.0; n];
    for j in 0..n {
        let alpha = h[j * n + j];
        let xnorm = (j + 1..n).map(|i| h[i * n + j].powi(2)).sum::<f64>().sqrt();
        if xnorm == 0.0 {
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        tau[j] = (beta - alpha) / beta;
        let mut v = vec![0.0; n];
        v[j] = 1.0;
        for i in j + 1..n {
            v[i] = h[i * n + j] / (alpha - beta);
        }
        for c in j..n {
            let s: f64 = (j..n).map(|i| v[i] * h[i * n + c]).sum();
            for i in j..n {
                h[i * n + c] -= tau[j] * v[i] * s;
            }
        }
        h[j * n + j] = beta;
        for i in j + 1..n {
            h[i * n + j] = v[i];
        }
    }
    (h, tau)
}

/// `Q = H_0 H_1 ... H_{n-1}` in float64, row-major.
fn build_q(n: usize, h: &[f32], tau: &[f32]) -> Vec<f64> {
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    for j in (0..n).rev() {
        let t = f64::from(tau[j]);
        if t == 0.0 {
            continue;
        }
        let v: Vec<f64> = (0..n)
            .map(|i| match i.cmp(&j) {
                std::cmp::Ordering::Less => 0.0,
                std::cmp::Ordering::Equal => 1.0,
                std::cmp::Ordering::Greater => f64::from(h[i * n + j]),
            })
            .collect();
        for c in 0..n {
            let s: f64 = (j..n).map(|i| v[i] * q[i * n + c]).sum();
            for i in j..n {
                q[i * n + c] -= t * v[i] * s;
            }
        }
    }
    q
}

fn norm1(n: usize, m: impl Fn(usize, usize) -> f64) -> f64 {
    (0..n)
        .map(|c| (0..n).map(|r| m(r, c).abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// `(sfr, orth)` of the gate for one matrix.
fn gate(n: usize, a: &[f32], h: &[f32], tau: &[f32]) -> (f64, f64) {
    let q = build_q(n, h, tau);
    let r = |i: usize, j: usize| if i <= j { f64::from(h[i * n + j]) } else { 0.0 };
    let qta = |i: usize, j: usize| {
        (0..n)
            .map(|k| q[k * n + i] * f64::from(a[k * n + j]))
            .sum::<f64>()
    };
    let qtq = |i: usize, j: usize| (0..n).map(|k| q[k * n + i] * q[k * n + j]).sum::<f64>();
    let ne = n as f64 * EPS_F32;
    let anorm = norm1(n, |i, j| f64::from(a[i * n + j]));
    let sfr = norm1(n, |i, j| r(i, j) - qta(i, j)) / (ne * anorm);
    let orth = norm1(n, |i, j| qtq(i, j) - if i == j { 1.0 } else { 0.0 }) / ne;
    (sfr, orth)
}

fn assert_meets_bar(what: &str, n: usize, a: &[f32], h: &[f32], tau: &[f32]) {
    let (sfr, orth) = gate(n, a, h, tau);
    assert!(
        sfr <= 5.0 && orth <= 25.0,
        "{what}: sfr {sfr:.3}, orth {orth:.3}"
    );
    assert!(
        tau.iter().all(|t| (0.0..=2.0).contains(t)),
        "{what}: tau outside [0, 2]"
    );
}

/// Largest elementwise gap to the float64 reference: `R` relative to the
/// largest `|R|` of its column, `v` and `tau` absolute (they are `O(1)`).
fn gap_to_reference(n: usize, a: &[f32], h: &[f32], tau: &[f32]) -> f64 {
    let a64: Vec<f64> = a.iter().map(|&x| f64::from(x)).collect();
    let (href, tref) = geqr2_f64(n, &a64);
    let mut gap = 0.0f64;
    for j in 0..n {
        let rmax = (0..=j)
            .map(|i| href[i * n + j].abs())
            .fold(f64::MIN_POSITIVE, f64::max);
        for i in 0..n {
            let d = (f64::from(h[i * n + j]) - href[i * n + j]).abs();
            gap = gap.max(if i <= j { d / rmax } else { d });
        }
        gap = gap.max((f64::from(tau[j]) - tref[j]).abs());
    }
    gap
}

/// A well-conditioned matrix (`randn + 2 sqrt(n) I`), so that `H` itself,
/// not only `Q R`, is determined to near `f32` precision.
fn well_conditioned(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let mut a = randn(rng, n * n);
    for i in 0..n {
        a[i * n + i] += 2.0 * (n as f32).sqrt();
    }
    a
}

#[test]
fn matches_float64_reference_elementwise() {
    let mut rng = StdRng::seed_from_u64(1);
    for (name, tuning) in tunings() {
        let backend = CpuBackend::with_tuning(tuning);
        for n in SIZES {
            let batch = 3;
            let a: Vec<f32> = (0..batch)
                .flat_map(|_| well_conditioned(&mut rng, n))
                .collect();
            let f = geqrf(&backend, Shape::new(batch, n).unwrap(), &a).unwrap();
            assert!(f.all_ok());
            for b in 0..batch {
                let sl = b * n * n..(b + 1) * n * n;
                let gap = gap_to_reference(n, &a[sl.clone()], &f.h[sl], &f.tau[b * n..(b + 1) * n]);
                assert!(
                    gap < 50.0 * EPS_F32 * (n as f64).sqrt(),
                    "{name} n={n} b={b}: gap {gap:e}"
                );
            }
        }
    }
}

#[test]
fn dense_randn_meets_the_bar() {
    let mut rng = StdRng::seed_from_u64(2);
    for (name, tuning) in tunings() {
        let backend = CpuBackend::with_tuning(tuning);
        for n in SIZES {
            for batch in [1, 4] {
                let a = randn(&mut rng, batch * n * n);
                let f = geqrf(&backend, Shape::new(batch, n).unwrap(), &a).unwrap();
                for b in 0..batch {
                    let sl = b * n * n..(b + 1) * n * n;
                    let what = format!("{name} n={n} batch={batch} b={b}");
                    assert_meets_bar(
                        &what,
                        n,
                        &a[sl.clone()],
                        &f.h[sl],
                        &f.tau[b * n..(b + 1) * n],
                    );
                }
            }
        }
    }
}

#[test]
fn exactly_zero_sub_columns_give_tau_exactly_zero() {
    let mut rng = StdRng::seed_from_u64(3);
    for (name, tuning) in tunings() {
        let backend = CpuBackend::with_tuning(tuning);
        for n in [33usize, 65, 100, 129] {
            // Columns from 3n/4 on are zero: they stay exactly zero under
            // every reflector, so each of their reflectors is the identity.
            let mut a = randn(&mut rng, n * n);
            let r = 3 * n / 4;
            for i in 0..n {
                a[i * n + r..(i + 1) * n].fill(0.0);
            }
            let f = geqrf(&backend, Shape::new(1, n).unwrap(), &a).unwrap();
            for j in r..n {
                assert_eq!(f.tau[j].to_bits(), 0, "{name} n={n} tau[{j}]");
                for i in 0..n {
                    assert_eq!(f.h[i * n + j], 0.0, "{name} n={n} H[{i}][{j}]");
                }
            }
            assert!(f.tau[..r].iter().all(|&t| t > 0.0));
            assert_meets_bar(name, n, &a, &f.h, &f.tau);

            // An upper triangular matrix is already R: H = A, tau = 0.
            let mut u = randn(&mut rng, n * n);
            for i in 0..n {
                u[i * n..i * n + i].fill(0.0);
            }
            let f = geqrf(&backend, Shape::new(1, n).unwrap(), &u).unwrap();
            assert!(
                f.tau.iter().all(|t| t.to_bits() == 0),
                "{name} n={n}: upper tau"
            );
            assert_eq!(f.h, u, "{name} n={n}: upper H");
        }
    }
}

#[test]
fn non_finite_matrices_are_flagged_and_the_rest_factored() {
    let mut rng = StdRng::seed_from_u64(4);
    for (name, tuning) in tunings() {
        let backend = CpuBackend::with_tuning(tuning);
        for n in [1usize, 32, 100] {
            let batch = 4;
            let mut a = randn(&mut rng, batch * n * n);
            a[n * n + n * n / 2] = f32::NAN;
            a[3 * n * n] = f32::NEG_INFINITY;
            let f = geqrf(&backend, Shape::new(batch, n).unwrap(), &a).unwrap();
            assert_eq!(
                f.info,
                [Info::OK, Info::NON_FINITE, Info::OK, Info::NON_FINITE],
                "{name}"
            );
            for b in [1, 3] {
                assert!(f.h[b * n * n..(b + 1) * n * n].iter().all(|x| x.is_nan()));
                assert!(f.tau[b * n..(b + 1) * n].iter().all(|x| x.is_nan()));
            }
            for b in [0, 2] {
                let sl = b * n * n..(b + 1) * n * n;
                let alone = geqrf(&backend, Shape::new(1, n).unwrap(), &a[sl.clone()]).unwrap();
                assert_eq!(
                    alone.h, f.h[sl],
                    "{name} n={n}: batch neighbours changed matrix {b}"
                );
            }
        }
    }
}

#[test]
fn huge_and_tiny_scales_factor_to_the_bar() {
    let mut rng = StdRng::seed_from_u64(5);
    for (name, tuning) in tunings() {
        let backend = CpuBackend::with_tuning(tuning);
        for n in [2usize, 33, 100, 129] {
            let base = randn(&mut rng, n * n);
            let unit = geqrf(&backend, Shape::new(1, n).unwrap(), &base).unwrap();
            for s in [1.0e-30f32, 1.0e30] {
                let a: Vec<f32> = base.iter().map(|x| x * s).collect();
                let f = geqrf(&backend, Shape::new(1, n).unwrap(), &a).unwrap();
                assert!(f.all_ok());
                assert!(f.h.iter().all(|x| x.is_finite()), "{name} n={n} s={s}");
                assert_meets_bar(&format!("{name} n={n} s={s}"), n, &a, &f.h, &f.tau);
                // Scaling A scales R and leaves v and tau alone.
                for (j, (t, tu)) in f.tau.iter().zip(&unit.tau).enumerate() {
                    assert!((t - tu).abs() <= 1e-4, "{name} n={n} s={s} tau[{j}]");
                }
            }
        }
    }
}

#[test]
fn empty_shapes_and_length_errors() {
    let backend = CpuBackend::new();
    for (batch, n) in [(0usize, 5usize), (3, 0), (0, 0)] {
        let f = geqrf(&backend, Shape::new(batch, n).unwrap(), &[]).unwrap();
        assert!(f.all_ok() && f.info.len() == batch);
    }
    let s = Shape::new(2, 3).unwrap();
    let a = vec![1.0f32; 18];
    let (mut h, mut tau, mut info) = (vec![0.0; 18], vec![0.0; 6], vec![Info::OK; 2]);
    assert!(matches!(
        BatchRef::new(s, &a[..17]),
        Err(QrError::LengthMismatch { what: "a", .. })
    ));
    // Views of different shapes over buffers of valid lengths.
    let other = Shape::new(3, 2).unwrap();
    let (mut h2, mut tau2, mut info2) = (vec![0.0; 12], vec![0.0; 6], vec![Info::OK; 3]);
    let err = backend
        .geqrf_into(
            BatchRef::new(s, &a).unwrap(),
            BatchMut::new(other, &mut h2, &mut tau2, &mut info2).unwrap(),
        )
        .unwrap_err();
    assert!(matches!(err, QrError::LengthMismatch { what: "h", .. }));
    backend
        .geqrf_into(
            BatchRef::new(s, &a).unwrap(),
            BatchMut::new(s, &mut h, &mut tau, &mut info).unwrap(),
        )
        .unwrap();
}

#[test]
fn larft_and_update_match_reflector_by_reflector() {
    use crate::kernels::{apply_block_reflector_left, larft, panel_factor};
    use faer::{MatMut, MatRef, Par};

    let mut rng = StdRng::seed_from_u64(6);
    for (m, k, ncols) in [(40usize, 8usize, 13usize), (65, 32, 70), (9, 9, 4)] {
        let mut p = randn(&mut rng, m * k);
        let mut tau = vec![0.0f32; k];
        // A zero column stays zero, so its reflector is the identity: that
        // covers tau = 0 inside T.
        if k > 3 {
            p[2 * m..3 * m].fill(0.0);
        }
        panel_factor(m, k, &mut p, m, &mut tau);
        if k > 3 {
            assert_eq!(tau[2], 0.0);
        }
        let mut v = p.clone();
        for c in 0..k {
            v[c * m..c * m + c].fill(0.0);
            v[c * m + c] = 1.0;
        }
        let mut t = vec![0.0f32; k * k];
        let mut scratch = vec![0.0f32; k * k];
        larft(m, k, &v, m, &tau, &mut t, k, &mut scratch);
        let c0 = randn(&mut rng, m * ncols);
        let mut c = c0.clone();
        let mut ws = vec![0.0f32; 2 * k * ncols];
        apply_block_reflector_left(
            MatRef::from_column_major_slice(&v, m, k),
            MatRef::from_column_major_slice(&t, k, k),
            MatMut::from_column_major_slice_mut(&mut c, m, ncols),
            &mut ws,
            Par::Seq,
        );
        // Q^T C = H_{k-1} ... H_0 C, one reflector at a time in float64.
        let mut e: Vec<f64> = c0.iter().map(|&x| f64::from(x)).collect();
        for j in 0..k {
            for col in 0..ncols {
                let s: f64 = (0..m)
                    .map(|i| f64::from(v[j * m + i]) * e[col * m + i])
                    .sum();
                for i in 0..m {
                    e[col * m + i] -= f64::from(tau[j]) * f64::from(v[j * m + i]) * s;
                }
            }
        }
        let cmax = c0.iter().fold(0.0f32, |acc, x| acc.max(x.abs()));
        for (x, y) in c.iter().zip(&e) {
            assert!(
                (f64::from(*x) - y).abs() <= 1e-5 * f64::from(cmax) * (m as f64).sqrt(),
                "m={m} k={k}"
            );
        }
        for r in 0..k {
            for col in 0..r {
                assert_eq!(t[r + col * k], 0.0, "T must be upper triangular");
            }
        }
    }
}

#[test]
fn backend_reports_itself() {
    let b = CpuBackend::new();
    assert_eq!(b.name(), "cpu");
    assert!(b.describe().starts_with("cpu: "));
    assert_eq!(b.tuning(), &Tuning::default());
}

#[test]
fn recursive_panel_matches_the_column_loop() {
    use crate::kernels::{larft, panel_factor, panel_factor_wy, panel_factor_wy_scratch};

    let mut rng = StdRng::seed_from_u64(7);
    for (m, k, leaf) in [
        (50usize, 24usize, 4usize),
        (64, 64, 8),
        (100, 37, 16),
        (33, 33, 1),
    ] {
        let a = randn(&mut rng, m * k);
        let (ldv, ldt) = (m + 3, k + 2);
        let mut p = a.clone();
        let mut tau = vec![0.0f32; k];
        let mut v = vec![f32::NAN; (k - 1) * ldv + m];
        let mut t = vec![f32::NAN; (k - 1) * ldt + k];
        let mut scratch = vec![0.0f32; panel_factor_wy_scratch(k)];
        panel_factor_wy(
            m,
            k,
            &mut p,
            m,
            &mut tau,
            &mut v,
            ldv,
            &mut t,
            ldt,
            &mut scratch,
            leaf,
        );

        let mut p0 = a.clone();
        let mut tau0 = vec![0.0f32; k];
        panel_factor(m, k, &mut p0, m, &mut tau0);
        let mut v0 = vec![0.0f32; m * k];
        for c in 0..k {
            for i in 0..m {
                v0[c * m + i] = match i.cmp(&c) {
                    std::cmp::Ordering::Less => 0.0,
                    std::cmp::Ordering::Equal => 1.0,
                    std::cmp::Ordering::Greater => p0[c * m + i],
                };
            }
        }
        let mut t0 = vec![0.0f32; k * k];
        let mut g = vec![0.0f32; k * k];
        larft(m, k, &v0, m, &tau0, &mut t0, k, &mut g);

        let tol = 1e-4f32;
        for c in 0..k {
            assert!((tau[c] - tau0[c]).abs() <= tol, "m={m} k={k} tau[{c}]");
            for i in 0..m {
                let scale = if i <= c {
                    1.0 + p0[c * m + i].abs()
                } else {
                    1.0
                };
                assert!(
                    (p[c * m + i] - p0[c * m + i]).abs() <= tol * scale,
                    "H[{i}][{c}]"
                );
                assert!((v[c * ldv + i] - v0[c * m + i]).abs() <= tol, "V[{i}][{c}]");
            }
            for r in 0..k {
                let (x, y) = (t[c * ldt + r], t0[c * k + r]);
                assert!(
                    (x - y).abs() <= tol * (1.0 + y.abs()),
                    "T[{r}][{c}]: {x} vs {y}"
                );
            }
        }
    }
}
