//! The behaviour table of docs/RELIABILITY.md, row by row, on qr-cpu:
//! non-finite entries, zero, identity, n = 1, subnormals, empty batches,
//! mismatched outputs and the extremes of the f32 range. Each row runs at
//! an unblocked and a blocked order, and under a tuning that sends every
//! order through the blocked path.

use qr_core::{Backend, BatchMut, BatchRef, Factorization, Info, QrError, Shape, geqrf};
use qr_cpu::{CpuBackend, Tuning};
use qr_verify::gate::{self, ORTH_GATE};
use qr_verify::{Case, Spec, generate};

/// One unblocked and two blocked orders (one not a multiple of the block).
const ORDERS: [usize; 3] = [7, 96, 161];

fn backends() -> Vec<(&'static str, CpuBackend)> {
    vec![
        ("default", CpuBackend::new()),
        (
            "blocked-nb5",
            CpuBackend::with_tuning(Tuning {
                small_n: 0,
                block: 5,
                ..Tuning::default()
            }),
        ),
    ]
}

fn dense(batch: usize, n: usize, seed: u64) -> Vec<f32> {
    let spec = Spec {
        batch,
        n,
        cond: 1.0,
        case: Case::Dense,
    };
    generate(&spec, seed)
}

fn factor(backend: &CpuBackend, batch: usize, n: usize, a: &[f32]) -> Factorization {
    geqrf(backend, Shape::new(batch, n).unwrap(), a).unwrap()
}

#[test]
fn non_finite_entries_flag_only_their_matrix() {
    for (name, backend) in backends() {
        for n in ORDERS {
            let mut a = dense(4, n, n as u64);
            let good = a.clone();
            let len = n * n;
            a[len + n + 1] = f32::NAN;
            a[2 * len + len - 1] = f32::NEG_INFINITY;
            // A signalling NaN is caught like any other.
            a[3 * len] = f32::from_bits(0x7f80_0001);
            let f = factor(&backend, 4, n, &a);
            assert_eq!(
                f.info,
                vec![
                    Info::OK,
                    Info::NON_FINITE,
                    Info::NON_FINITE,
                    Info::NON_FINITE
                ],
                "{name} n={n}"
            );
            for b in 1..4 {
                let (h, tau) = (&f.h[b * len..(b + 1) * len], &f.tau[b * n..(b + 1) * n]);
                assert!(
                    h.iter().chain(tau).all(|x| x.is_nan()),
                    "{name} n={n} matrix {b}"
                );
            }
            // The unflagged matrix is factored exactly as it is on its own.
            let alone = factor(&backend, 1, n, &good[..len]);
            assert_eq!(bits(&f.h[..len]), bits(&alone.h), "{name} n={n}");
            assert_eq!(bits(&f.tau[..n]), bits(&alone.tau), "{name} n={n}");
            let report = gate::check(
                Shape::new(1, n).unwrap(),
                &good[..len],
                &f.h[..len],
                &f.tau[..n],
            );
            assert!(report.unwrap().passes_gate(), "{name} n={n}");
        }
    }
}

#[test]
fn zero_matrix_gives_tau_zero_and_passes() {
    for (name, backend) in backends() {
        for n in ORDERS {
            let a = vec![0.0f32; 2 * n * n];
            let f = factor(&backend, 2, n, &a);
            assert!(f.all_ok());
            assert!(
                f.tau.iter().all(|&t| t.to_bits() == 0),
                "{name} n={n}: tau must be +0"
            );
            assert!(f.h.iter().all(|&x| x == 0.0), "{name} n={n}");
            let r = gate::check(Shape::new(2, n).unwrap(), &a, &f.h, &f.tau).unwrap();
            assert!(r.passes_gate() && r.worst_sfr() == 0.0, "{name} n={n}");
        }
    }
}

#[test]
fn identity_and_upper_triangular_come_back_unchanged() {
    for (name, backend) in backends() {
        for n in ORDERS {
            let mut a = vec![0.0f32; n * n];
            (0..n).for_each(|i| a[i * n + i] = 1.0);
            let f = factor(&backend, 1, n, &a);
            assert_eq!(f.h, a, "{name} n={n}: H = I");
            assert!(f.tau.iter().all(|&t| t == 0.0), "{name} n={n}");

            let upper = Spec {
                batch: 1,
                n,
                cond: 1.0,
                case: Case::Upper,
            };
            let a = generate(&upper, 3);
            let f = factor(&backend, 1, n, &a);
            assert_eq!(f.h, a, "{name} n={n}: triangular input is its own R");
            assert!(f.tau.iter().all(|&t| t == 0.0), "{name} n={n}");
        }
    }
}

#[test]
fn order_one_is_its_own_factorization() {
    let values = [
        0.0f32,
        -0.0,
        1.5,
        -3.0,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -1e-30,
    ];
    for (name, backend) in backends() {
        let f = factor(&backend, values.len(), 1, &values);
        assert!(f.all_ok());
        assert_eq!(bits(&f.h), bits(&values), "{name}: H = A bit for bit");
        assert!(f.tau.iter().all(|&t| t.to_bits() == 0), "{name}: tau = +0");
    }
}

#[test]
fn subnormal_entries_factor_with_an_orthogonal_q() {
    for (name, backend) in backends() {
        for n in ORDERS {
            // Subnormal-only: every entry of a dense matrix scaled to ~1e-40.
            let tiny: Vec<f32> = dense(1, n, 5).iter().map(|&x| x * 1e-40).collect();
            assert!(tiny.iter().all(|x| !x.is_normal()));
            let f = factor(&backend, 1, n, &tiny);
            assert!(f.all_ok(), "{name} n={n}");
            assert!(
                f.h.iter().chain(&f.tau).all(|x| x.is_finite()),
                "{name} n={n}"
            );
            assert!(
                f.tau.iter().all(|t| (0.0..=2.0).contains(t)),
                "{name} n={n}"
            );
            let g = gate::check(Shape::new(1, n).unwrap(), &tiny, &f.h, &f.tau).unwrap();
            // The contract for subnormal-only matrices (docs/RELIABILITY.md):
            // Q orthogonal to the gate; R within the gate of ||A||_1 floored
            // at 2^-112, since subnormals carry absolute rounding error.
            let m = g.matrices[0];
            assert!(m.orth <= ORTH_GATE, "{name} n={n}: orth {}", m.orth);
            let anorm = one_norm(n, &tiny);
            let floor = 2f64.powi(-112);
            assert!(
                m.sfr * anorm / anorm.max(floor) <= 20.0,
                "{name} n={n}: sfr {}",
                m.sfr
            );

            // Subnormal entries inside a normal matrix: the full gate.
            let mut mixed = dense(1, n, 6);
            for (k, x) in mixed.iter_mut().enumerate().filter(|(k, _)| k % 3 == 0) {
                *x = f32::from_bits(1 + k as u32) * if k % 2 == 0 { 1.0 } else { -1.0 };
            }
            let f = factor(&backend, 1, n, &mixed);
            let g = gate::check(Shape::new(1, n).unwrap(), &mixed, &f.h, &f.tau).unwrap();
            assert!(
                f.all_ok() && g.passes_gate(),
                "{name} n={n}: {:?}",
                g.matrices[0]
            );
        }
    }
}

#[test]
fn ends_of_the_normal_range_pass_the_gate() {
    for (name, backend) in backends() {
        for n in ORDERS {
            for scale in [2f32.powi(-112), 1e-30, 1e30, 2f32.powi(112)] {
                let a: Vec<f32> = dense(2, n, 8).iter().map(|&x| x * scale).collect();
                let f = factor(&backend, 2, n, &a);
                let g = gate::check(Shape::new(2, n).unwrap(), &a, &f.h, &f.tau).unwrap();
                assert!(
                    f.all_ok() && g.passes_gate(),
                    "{name} n={n} scale {scale:e}: {g:?}"
                );
            }
        }
    }
}

/// A matrix whose `R` cannot be stored in `f32` (a column 2-norm above
/// `f32::MAX`) is `Info::OVERFLOW` with NaN outputs, never `Info::OK` with
/// infinities; its neighbours factor exactly as they would alone, and a
/// matrix just inside the range (column norms about `f32::MAX / 2`) still
/// factors, finite.
#[test]
fn unrepresentable_r_is_flagged() {
    let max = f32::MAX;
    for (name, backend) in backends() {
        let f = factor(&backend, 1, 2, &[max, 1.0, max, 1.0]);
        assert_eq!(f.info, [Info::OVERFLOW], "{name}: h {:?}", f.h);
        assert!(f.h.iter().chain(&f.tau).all(|x| x.is_nan()), "{name}");

        let inside = [max / 4.0, 1.0, max / 4.0, 1.0];
        let f = factor(&backend, 1, 2, &inside);
        assert_eq!(f.info, [Info::OK], "{name}: just inside the range");
        assert!(f.h.iter().chain(&f.tau).all(|x| x.is_finite()), "{name}");

        for n in ORDERS {
            let len = n * n;
            let mut a = dense(3, n, 40 + n as u64);
            // Column 0 of matrix 1: every entry MAX / 2, norm MAX sqrt(n) / 2.
            for i in 0..n {
                a[len + i * n] = max / 2.0;
            }
            let f = factor(&backend, 3, n, &a);
            assert_eq!(f.info, [Info::OK, Info::OVERFLOW, Info::OK], "{name} n={n}");
            assert!(
                f.h[len..2 * len]
                    .iter()
                    .chain(&f.tau[n..2 * n])
                    .all(|x| x.is_nan()),
                "{name} n={n}: the flagged matrix is not NaN-filled"
            );
            for b in [0, 2] {
                let m = b * len..(b + 1) * len;
                let alone = factor(&backend, 1, n, &a[m.clone()]);
                assert_eq!(alone.info, [Info::OK]);
                let same =
                    |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
                assert!(
                    same(&alone.h, &f.h[m]) && same(&alone.tau, &f.tau[b * n..(b + 1) * n]),
                    "{name} n={n}: matrix {b} differs beside an overflowing one"
                );
            }
        }
    }
}

#[test]
fn empty_batches_and_orders() {
    for (name, backend) in backends() {
        for (batch, n) in [(0, 0), (0, 9), (5, 0), (0, 200)] {
            let shape = Shape::new(batch, n).unwrap();
            let mut info = vec![Info(-99); batch];
            let out = BatchMut::new(shape, &mut [], &mut [], &mut info).unwrap();
            backend
                .geqrf_into(BatchRef::new(shape, &[]).unwrap(), out)
                .unwrap();
            assert!(
                info.iter().all(|i| i.is_ok()),
                "{name} {batch}x{n}: {info:?}"
            );
        }
    }
}

#[test]
fn outputs_of_another_shape_are_an_error_and_untouched() {
    let backend = CpuBackend::new();
    let a = dense(2, 8, 1);
    let input = BatchRef::new(Shape::new(2, 8).unwrap(), &a).unwrap();
    for (batch, n) in [(3, 8), (1, 8), (2, 9), (2, 7), (8, 4)] {
        let shape = Shape::new(batch, n).unwrap();
        let mut f = Factorization::zeroed(shape).unwrap();
        let err = backend
            .geqrf_into(input, f.as_batch_mut().unwrap())
            .unwrap_err();
        assert!(
            matches!(err, QrError::LengthMismatch { .. }),
            "{batch}x{n}: {err}"
        );
        assert!(
            f.h.iter().chain(&f.tau).all(|&x| x == 0.0),
            "{batch}x{n}: outputs written"
        );
    }
}

#[test]
fn unreservable_outputs_are_an_error() {
    // 2^50 bytes of H: fallible allocation reports it, the process lives on.
    let shape = Shape::new(1 << 20, 1 << 14).unwrap();
    assert!(matches!(
        Factorization::zeroed(shape),
        Err(QrError::OutOfMemory { .. })
    ));
    // ... and the backend still works afterwards.
    let a = dense(1, 5, 2);
    assert!(factor(&CpuBackend::new(), 1, 5, &a).all_ok());
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

fn one_norm(n: usize, a: &[f32]) -> f64 {
    (0..n)
        .map(|j| (0..n).map(|i| f64::from(a[i * n + j]).abs()).sum::<f64>())
        .fold(0.0, f64::max)
}
