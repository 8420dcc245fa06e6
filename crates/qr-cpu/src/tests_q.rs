//! Tests of `orgqr`, `ormqr` and `qr` against a float64 product of the same
//! reflectors, written here independently of the code under test.

use qr_core::{
    ApplyQ, Backend, BatchRef, EPS_F32, Info, QrError, Reflectors, Shape, Side, Transpose, geqrf,
    orgqr, ormqr, qr,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use crate::{CpuBackend, QTuning, Tuning};

/// Orders around the block boundaries (32) and the unblocked crossover.
const SIZES: [usize; 10] = [1, 2, 31, 32, 33, 63, 64, 65, 100, 257];

/// Backends that between them send every size through every path.
fn backends() -> Vec<(&'static str, CpuBackend)> {
    let q = |small: usize, block: usize| QTuning {
        orgqr_small_n: small,
        orgqr_block: block,
        ormqr_small_n: small,
        ormqr_block: block,
        wide_block: block + 3,
        wide_block_min_n: 100,
    };
    vec![
        ("default", CpuBackend::new()),
        (
            "blocked-nb8",
            CpuBackend::with_tuning(every_batch_split()).with_q_tuning(q(0, 8)),
        ),
        ("blocked-nb32", CpuBackend::new().with_q_tuning(q(0, 32))),
        ("blocked-nb5", CpuBackend::new().with_q_tuning(q(0, 5))),
        (
            "unblocked",
            CpuBackend::with_tuning(every_batch_split()).with_q_tuning(q(usize::MAX, 32)),
        ),
        (
            "inner-parallel",
            CpuBackend::with_tuning(Tuning {
                batch_parallel_min: usize::MAX,
                par_update_min_cols: 1,
                ..Tuning::default()
            })
            .with_q_tuning(q(16, 16)),
        ),
    ]
}

/// The default tuning with every batch of two or more matrices spread over
/// the pool, however small, so that the small test shapes take that path.
fn every_batch_split() -> Tuning {
    Tuning {
        batch_parallel_min_work: 0,
        ..Tuning::default()
    }
}

fn randn(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len)
        .map(|_| rng.sample::<f32, _>(StandardNormal))
        .collect()
}

/// `Q = H_0 ... H_{n-1}` of one matrix in float64, row-major: the identity
/// multiplied from the left by `H_{n-1}`, then `H_{n-2}`, ... .
fn q64(n: usize, h: &[f32], tau: &[f32]) -> Vec<f64> {
    let mut q = vec![0.0f64; n * n];
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    for j in (0..n).rev() {
        let t = f64::from(tau[j]);
        let v = |i: usize| if i == j { 1.0 } else { f64::from(h[i * n + j]) };
        for c in 0..n {
            let s: f64 = (j..n).map(|i| v(i) * q[i * n + c]).sum();
            for i in j..n {
                q[i * n + c] -= t * v(i) * s;
            }
        }
    }
    q
}

/// Max column sum of `|m|` for a `rows x cols` matrix given by element.
fn norm1(rows: usize, cols: usize, m: impl Fn(usize, usize) -> f64) -> f64 {
    (0..cols)
        .map(|c| (0..rows).map(|r| m(r, c).abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// Reflectors of `batch` dense randn matrices, as this crate's geqrf gives
/// them.
fn factors(rng: &mut StdRng, batch: usize, n: usize) -> (Shape, Vec<f32>, Vec<f32>) {
    let shape = Shape::new(batch, n).unwrap();
    let a = randn(rng, shape.a_len());
    let f = geqrf(&CpuBackend::new(), shape, &a).unwrap();
    assert!(f.all_ok());
    (shape, f.h, f.tau)
}

/// `||Q - Q64||_1 / (n eps)` of one matrix.
fn orgqr_error(n: usize, h: &[f32], tau: &[f32], q: &[f32]) -> f64 {
    let r = q64(n, h, tau);
    norm1(n, n, |i, j| f64::from(q[i * n + j]) - r[i * n + j]) / (n as f64 * EPS_F32)
}

/// `op(Q64) C` or `C op(Q64)` in float64, row-major as `c`.
fn ormqr64(n: usize, q: &[f64], op: ApplyQ, k: usize, c: &[f32]) -> Vec<f64> {
    let qe = |i: usize, j: usize| match op.transpose {
        Transpose::No => q[i * n + j],
        Transpose::Yes => q[j * n + i],
    };
    let mut out = vec![0.0f64; n * k];
    match op.side {
        Side::Left => {
            for i in 0..n {
                for col in 0..k {
                    out[i * k + col] = (0..n).map(|l| qe(i, l) * f64::from(c[l * k + col])).sum();
                }
            }
        }
        Side::Right => {
            for r in 0..k {
                for j in 0..n {
                    out[r * n + j] = (0..n).map(|l| f64::from(c[r * n + l]) * qe(l, j)).sum();
                }
            }
        }
    }
    out
}

/// `||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)` of one matrix.
fn ormqr_error(n: usize, q: &[f64], op: ApplyQ, k: usize, c: &[f32], got: &[f32]) -> f64 {
    let want = ormqr64(n, q, op, k, c);
    let (rows, cols) = match op.side {
        Side::Left => (n, k),
        Side::Right => (k, n),
    };
    let cnorm = norm1(rows, cols, |i, j| f64::from(c[i * cols + j]));
    let diff = norm1(rows, cols, |i, j| {
        f64::from(got[i * cols + j]) - want[i * cols + j]
    });
    if cnorm == 0.0 {
        diff
    } else {
        diff / (n as f64 * EPS_F32 * cnorm)
    }
}

#[test]
fn orgqr_matches_the_float64_product() {
    let mut rng = StdRng::seed_from_u64(11);
    for (name, backend) in backends() {
        for n in SIZES {
            for batch in [1, 3] {
                let (shape, h, tau) = factors(&mut rng, batch, n);
                let q = orgqr(&backend, shape, &h, &tau).unwrap();
                assert!(q.all_ok(), "{name} n={n}");
                for b in 0..batch {
                    let (hb, tb) = (&h[b * n * n..(b + 1) * n * n], &tau[b * n..(b + 1) * n]);
                    let e = orgqr_error(n, hb, tb, &q.data[b * n * n..(b + 1) * n * n]);
                    assert!(e <= 5.0, "{name} n={n} batch={batch} b={b}: error {e:.3}");
                }
            }
        }
    }
}

#[test]
fn ormqr_matches_the_float64_product() {
    let mut rng = StdRng::seed_from_u64(12);
    for (name, backend) in backends() {
        for n in [1usize, 2, 31, 32, 33, 64, 65, 100, 257] {
            if n == 257 && !matches!(name, "default" | "blocked-nb5") {
                continue;
            }
            let batch = 2;
            let (shape, h, tau) = factors(&mut rng, batch, n);
            let qs: Vec<Vec<f64>> = (0..batch)
                .map(|b| q64(n, &h[b * n * n..(b + 1) * n * n], &tau[b * n..(b + 1) * n]))
                .collect();
            for op in ApplyQ::ALL {
                for k in [0, 1, 7, n, 2 * n + 3] {
                    let c = randn(&mut rng, batch * n * k);
                    let got = ormqr(&backend, shape, &h, &tau, op, k, &c).unwrap();
                    assert!(got.all_ok(), "{name} n={n} {op} k={k}");
                    for (b, q) in qs.iter().enumerate() {
                        let sl = b * n * k..(b + 1) * n * k;
                        let e = ormqr_error(n, q, op, k, &c[sl.clone()], &got.data[sl]);
                        assert!(e <= 5.0, "{name} n={n} {op} k={k} b={b}: error {e:.3}");
                    }
                }
            }
        }
    }
}

#[test]
fn q_transpose_times_q_is_the_identity() {
    let mut rng = StdRng::seed_from_u64(13);
    for (name, backend) in backends() {
        for n in [2usize, 33, 65, 100] {
            let (shape, h, tau) = factors(&mut rng, 2, n);
            let q = orgqr(&backend, shape, &h, &tau).unwrap();
            let qtq = ormqr(&backend, shape, &h, &tau, ApplyQ::QT_LEFT, n, &q.data).unwrap();
            assert!(qtq.all_ok());
            for b in 0..2 {
                let m = &qtq.data[b * n * n..(b + 1) * n * n];
                let e = norm1(n, n, |i, j| {
                    f64::from(m[i * n + j]) - if i == j { 1.0 } else { 0.0 }
                }) / (n as f64 * EPS_F32);
                assert!(e <= 25.0, "{name} n={n} b={b}: |Q^T Q - I| {e:.3}");
            }
        }
    }
}

#[test]
fn qr_is_geqrf_then_orgqr_bit_for_bit() {
    let mut rng = StdRng::seed_from_u64(14);
    for (name, backend) in backends() {
        for n in [1usize, 31, 33, 65, 100] {
            for batch in [1, 3] {
                let shape = Shape::new(batch, n).unwrap();
                let mut a = randn(&mut rng, shape.a_len());
                if batch == 3 {
                    a[n * n] = f32::NAN;
                }
                let got = qr(&backend, shape, &a).unwrap();
                let f = geqrf(&backend, shape, &a).unwrap();
                let q = orgqr(&backend, shape, &f.h, &f.tau).unwrap();
                assert_eq!(got.info, f.info, "{name} n={n}");
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got.q), bits(&q.data), "{name} n={n} batch={batch}: Q");
                for b in 0..batch {
                    for i in 0..n {
                        for j in 0..n {
                            let (x, hx) =
                                (got.r[b * n * n + i * n + j], f.h[b * n * n + i * n + j]);
                            if !f.info[b].is_ok() {
                                assert!(x.is_nan());
                            } else if i <= j {
                                assert_eq!(x.to_bits(), hx.to_bits());
                            } else {
                                assert_eq!(x, 0.0);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn non_finite_reflectors_poison_only_their_matrix() {
    let mut rng = StdRng::seed_from_u64(15);
    for (name, backend) in backends() {
        for n in [1usize, 2, 33, 100] {
            let batch = 3;
            let (shape, h, tau) = factors(&mut rng, batch, n);
            let k = 5;
            let c = randn(&mut rng, batch * n * k);
            let clean_q = orgqr(&backend, shape, &h, &tau).unwrap();
            let clean_c: Vec<_> = ApplyQ::ALL
                .iter()
                .map(|&op| ormqr(&backend, shape, &h, &tau, op, k, &c).unwrap())
                .collect();
            // NaN in tau; infinity below the diagonal (n > 1); R's part is
            // not read, so a NaN there changes nothing.
            let mut poisons: Vec<(Vec<f32>, Vec<f32>, Info)> = vec![];
            let mut t1 = tau.clone();
            t1[n + n / 2] = f32::NAN;
            poisons.push((h.clone(), t1, Info::NON_FINITE));
            if n > 1 {
                let mut h1 = h.clone();
                h1[n * n + (n - 1) * n] = f32::INFINITY;
                poisons.push((h1, tau.clone(), Info::NON_FINITE));
            }
            let mut h2 = h.clone();
            h2[n * n + n - 1] = f32::NAN;
            poisons.push((h2, tau.clone(), Info::OK));
            for (hp, tp, want) in poisons {
                let q = orgqr(&backend, shape, &hp, &tp).unwrap();
                assert_eq!(q.info, [Info::OK, want, Info::OK], "{name} n={n}");
                let mid = n * n..2 * n * n;
                if want == Info::OK {
                    assert_eq!(q.data, clean_q.data, "{name} n={n}");
                } else {
                    assert!(q.data[mid].iter().all(|x| x.is_nan()), "{name} n={n}");
                    for b in [0, 2] {
                        let sl = b * n * n..(b + 1) * n * n;
                        assert_eq!(q.data[sl.clone()], clean_q.data[sl], "{name} n={n} b={b}");
                    }
                }
                for (op, clean) in ApplyQ::ALL.iter().zip(&clean_c) {
                    let got = ormqr(&backend, shape, &hp, &tp, *op, k, &c).unwrap();
                    assert_eq!(got.info, [Info::OK, want, Info::OK], "{name} n={n} {op}");
                    for b in 0..batch {
                        let sl = b * n * k..(b + 1) * n * k;
                        if b == 1 && want != Info::OK {
                            assert!(got.data[sl].iter().all(|x| x.is_nan()));
                        } else {
                            let bits =
                                |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                            assert_eq!(bits(&got.data[sl.clone()]), bits(&clean.data[sl]));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn overflowing_reflectors_are_flagged_and_nan_in_c_is_not() {
    for (name, backend) in backends() {
        for n in [2usize, 40, 100] {
            let shape = Shape::new(2, n).unwrap();
            let mut rng = StdRng::seed_from_u64(16);
            let (_, h, tau) = factors(&mut rng, 2, n);
            // Finite but huge: v = 1e30 in the first reflector of matrix 1.
            let mut hb = h.clone();
            hb[n * n + n] = 1.0e30;
            let mut tb = tau.clone();
            tb[n] = 1.0;
            let q = orgqr(&backend, shape, &hb, &tb).unwrap();
            assert_eq!(q.info, [Info::OK, Info::OVERFLOW], "{name} n={n}");
            assert!(q.data[n * n..].iter().all(|x| x.is_nan()));
            let mut c = randn(&mut rng, 2 * n * 3);
            for op in ApplyQ::ALL {
                let got = ormqr(&backend, shape, &hb, &tb, op, 3, &c).unwrap();
                assert_eq!(got.info, [Info::OK, Info::OVERFLOW], "{name} n={n} {op}");
                assert!(got.data[n * 3..].iter().all(|x| x.is_nan()));
            }
            // A NaN already in C stays in the product and is not an info.
            c[1] = f32::NAN;
            for op in ApplyQ::ALL {
                let got = ormqr(&backend, shape, &h, &tau, op, 3, &c).unwrap();
                assert_eq!(got.info, [Info::OK, Info::OK], "{name} n={n} {op}");
                assert!(got.data[..n * 3].iter().any(|x| x.is_nan()));
                assert!(got.data[n * 3..].iter().all(|x| x.is_finite()));
            }
        }
    }
}

#[test]
fn tau_outside_zero_two_is_computed_with() {
    let mut rng = StdRng::seed_from_u64(17);
    for (name, backend) in backends() {
        for n in [3usize, 40, 70] {
            let shape = Shape::new(1, n).unwrap();
            let h: Vec<f32> = randn(&mut rng, n * n).iter().map(|x| 0.3 * x).collect();
            let tau: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..5.0)).collect();
            let q = orgqr(&backend, shape, &h, &tau).unwrap();
            let r = q64(n, &h, &tau);
            if q.info[0] != Info::OK {
                // Such a product can grow past f32; then it must be flagged.
                assert!(r.iter().any(|x| x.abs() > 1e30), "{name} n={n}");
                continue;
            }
            let scale = r.iter().fold(1.0f64, |m, x| m.max(x.abs()));
            for (x, y) in q.data.iter().zip(&r) {
                assert!(
                    (f64::from(*x) - y).abs() <= 1e-4 * scale * n as f64,
                    "{name} n={n}: {x} vs {y}"
                );
            }
        }
    }
}

#[test]
fn arbitrary_reflectors_never_panic() {
    let mut rng = StdRng::seed_from_u64(18);
    let specials = [
        0.0f32,
        -0.0,
        1.0e38,
        -3.0e38,
        1.0e-40,
        f32::NAN,
        f32::INFINITY,
        f32::MIN_POSITIVE,
    ];
    for (name, backend) in backends() {
        for n in [1usize, 2, 17, 40, 66] {
            let shape = Shape::new(3, n).unwrap();
            let pick = |rng: &mut StdRng| {
                if rng.random_range(0..4) == 0 {
                    specials[rng.random_range(0..specials.len())]
                } else {
                    rng.sample::<f32, _>(StandardNormal) * 10.0f32.powi(rng.random_range(-5..6))
                }
            };
            let h: Vec<f32> = (0..shape.a_len()).map(|_| pick(&mut rng)).collect();
            let tau: Vec<f32> = (0..shape.tau_len()).map(|_| pick(&mut rng)).collect();
            let q = orgqr(&backend, shape, &h, &tau).unwrap();
            let c: Vec<f32> = (0..3 * n * 4).map(|_| pick(&mut rng)).collect();
            for (b, info) in q.info.iter().enumerate() {
                let m = &q.data[b * n * n..(b + 1) * n * n];
                match *info {
                    Info::OK => assert!(m.iter().all(|x| x.is_finite()), "{name} n={n}"),
                    _ => assert!(m.iter().all(|x| x.is_nan()), "{name} n={n}"),
                }
            }
            for op in ApplyQ::ALL {
                let got = ormqr(&backend, shape, &h, &tau, op, 4, &c).unwrap();
                assert_eq!(
                    got.info.iter().map(|i| i.0 == 1).collect::<Vec<_>>(),
                    q.info.iter().map(|i| i.0 == 1).collect::<Vec<_>>(),
                    "{name} n={n}: NON_FINITE is about the reflectors only"
                );
            }
        }
    }
}

#[test]
fn empty_shapes_zero_k_and_length_errors() {
    let backend = CpuBackend::new();
    for (batch, n) in [(0usize, 5usize), (3, 0), (0, 0)] {
        let shape = Shape::new(batch, n).unwrap();
        let q = orgqr(&backend, shape, &[], &vec![0.0; batch * n]).unwrap();
        assert!(q.all_ok() && q.info.len() == batch);
        let c = ormqr(
            &backend,
            shape,
            &[],
            &vec![0.0; batch * n],
            ApplyQ::QT_LEFT,
            4,
            &[],
        );
        assert!(c.unwrap().info.len() == batch);
    }
    // k = 0: nothing to compute, but the reflectors' status is reported.
    let s = Shape::new(2, 3).unwrap();
    let h = vec![0.5f32; 18];
    let mut tau = vec![1.0f32; 6];
    tau[4] = f32::NAN;
    let got = ormqr(&backend, s, &h, &tau, ApplyQ::QT_LEFT, 0, &[]).unwrap();
    assert_eq!(got.info, [Info::OK, Info::NON_FINITE]);

    let mut info = vec![Info::OK; 2];
    let f = Reflectors::new(s, &h, &tau).unwrap();
    assert!(matches!(
        backend.orgqr_into(f, &mut [0.0; 17], &mut info),
        Err(QrError::LengthMismatch { what: "q", .. })
    ));
    assert!(matches!(
        backend.orgqr_into(f, &mut [0.0; 18], &mut info[..1]),
        Err(QrError::LengthMismatch { what: "info", .. })
    ));
    assert!(matches!(
        backend.ormqr_into(f, ApplyQ::QT_LEFT, 2, &mut [0.0; 11], &mut info),
        Err(QrError::LengthMismatch { what: "c", .. })
    ));
    assert!(matches!(
        backend.ormqr_into(f, ApplyQ::QT_LEFT, usize::MAX, &mut [], &mut info),
        Err(QrError::SizeOverflow { .. })
    ));
    let (mut q, mut r) = (vec![0.0; 18], vec![0.0; 17]);
    let a = vec![1.0f32; 18];
    assert!(matches!(
        backend.qr_into(BatchRef::new(s, &a).unwrap(), &mut q, &mut r, &mut info),
        Err(QrError::LengthMismatch { what: "r", .. })
    ));
}

#[test]
fn orgqr_overwrites_whatever_q_held() {
    let mut rng = StdRng::seed_from_u64(19);
    for (name, backend) in backends() {
        for n in [2usize, 17, 33, 48, 65, 100] {
            let (shape, h, tau) = factors(&mut rng, 2, n);
            let f = Reflectors::new(shape, &h, &tau).unwrap();
            let mut info = vec![Info::OK; 2];
            let mut clean = vec![0.0f32; shape.a_len()];
            backend.orgqr_into(f, &mut clean, &mut info).unwrap();
            for junk in [f32::NAN, f32::INFINITY, 1.0e38] {
                let mut q = vec![junk; shape.a_len()];
                backend.orgqr_into(f, &mut q, &mut info).unwrap();
                assert_eq!(info, [Info::OK, Info::OK], "{name} n={n}");
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&q), bits(&clean), "{name} n={n} junk={junk}");
            }
        }
    }
}
