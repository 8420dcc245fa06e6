//! LAPACK's own QR test recipe (`xCHKQR` / `xQRT01`) on qr-cpu: its eight
//! matrix types at every order 1..=64 and at 512, through both the
//! unblocked and the blocked path, judged by LAPACK's ratios
//!
//! - `||A - Q R||_1 / (max(1, n) eps ||A||_1)`
//! - `||I - Q^T Q||_1 / (max(1, n) eps)`
//!
//! with LAPACK's `eps = slamch('E') = 2^-24` and its default threshold 30
//! (`qr_verify::recipe`, shared with the GPU test target).
//! Outputs are prefilled with a signalling-NaN pattern, so an element the
//! backend never wrote fails the ratio (and is reported by name).

use qr_core::{Backend, BatchMut, BatchRef, Info, Shape};
use qr_cpu::{CpuBackend, Tuning};
use qr_verify::{Case, LAPACK_THRESH, LapackType, Spec, generate, lapack_ratios};

/// Never produced by arithmetic: a signalling NaN with a payload.
const POISON: u32 = 0x7fa0_dead;

/// The two tunings that between them take every order through both paths.
fn backends() -> [(&'static str, CpuBackend); 2] {
    [
        ("default", CpuBackend::new()),
        (
            "blocked-nb8",
            CpuBackend::with_tuning(Tuning {
                small_n: 0,
                block: 8,
                ..Tuning::default()
            }),
        ),
    ]
}

/// Factors `batch` matrices of `lapack` type and order `n` with each backend
/// into poisoned outputs; returns the worst ratios and panics on any
/// unwritten element, error or non-OK info.
fn run(t: LapackType, n: usize, batch: usize, seed: u64) -> (f64, f64) {
    let spec = Spec {
        batch,
        n,
        cond: 0.0,
        case: Case::Lapack(t),
    };
    let a = generate(&spec, seed);
    let shape = Shape::new(batch, n).unwrap();
    let mut worst = (0.0f64, 0.0f64);
    for (name, backend) in backends() {
        let mut h = vec![f32::from_bits(POISON); shape.a_len()];
        let mut tau = vec![f32::from_bits(POISON); shape.tau_len()];
        let mut info = vec![Info(-99); batch];
        let out = BatchMut::new(shape, &mut h, &mut tau, &mut info).unwrap();
        backend
            .geqrf_into(BatchRef::new(shape, &a).unwrap(), out)
            .unwrap_or_else(|e| panic!("{spec} on {name}: {e}"));
        assert!(
            info.iter().all(|i| i.is_ok()),
            "{spec} on {name}: info {info:?}"
        );
        let unwritten = h.iter().chain(&tau).position(|x| x.to_bits() == POISON);
        assert_eq!(unwritten, None, "{spec} on {name}: element never written");
        for b in 0..batch {
            let m = b * n * n..(b + 1) * n * n;
            let (res, orth) = lapack_ratios(n, &a[m.clone()], &h[m], &tau[b * n..(b + 1) * n]);
            assert!(
                res < LAPACK_THRESH && orth < LAPACK_THRESH,
                "{spec} matrix {b} on {name}: ||A - QR|| ratio {res:.3}, ||I - Q^T Q|| ratio {orth:.3}"
            );
            worst = (worst.0.max(res), worst.1.max(orth));
        }
    }
    worst
}

#[test]
fn eight_types_at_orders_1_to_64() {
    for t in LapackType::ALL {
        let mut worst = (0.0f64, 0.0f64);
        for n in 1..=64 {
            let (r, o) = run(t, n, 2, 1000 + n as u64);
            worst = (worst.0.max(r), worst.1.max(o));
        }
        eprintln!(
            "{:16} n = 1..64: worst ratios {:.3} {:.3}",
            Case::Lapack(t),
            worst.0,
            worst.1
        );
    }
}

#[test]
fn eight_types_at_order_512() {
    for t in LapackType::ALL {
        let (r, o) = run(t, 512, 1, 512);
        eprintln!("{:16} n = 512: ratios {r:.3} {o:.3}", Case::Lapack(t));
    }
}

/// The recipe's checker is not vacuous: a poisoned, a perturbed and a
/// wrongly signed factorization all fail it.
#[test]
fn the_ratios_catch_wrong_factorizations() {
    let n = 6;
    let spec = Spec {
        batch: 1,
        n,
        cond: 0.0,
        case: Case::Lapack(LapackType::Cond2),
    };
    let a = generate(&spec, 7);
    let f = qr_core::geqrf(&CpuBackend::new(), Shape::new(1, n).unwrap(), &a).unwrap();
    let (r, o) = lapack_ratios(n, &a, &f.h, &f.tau);
    assert!(r < LAPACK_THRESH && o < LAPACK_THRESH);

    let mut h = f.h.clone();
    h[2] = f32::from_bits(POISON);
    // NaN fails the recipe's `<` test.
    let (poisoned, _) = lapack_ratios(n, &a, &h, &f.tau);
    assert!(
        poisoned.is_nan() || poisoned >= LAPACK_THRESH,
        "an unwritten R entry"
    );
    let mut h = f.h.clone();
    h[n + 1] *= 1.0 + 1e-4;
    assert!(
        lapack_ratios(n, &a, &h, &f.tau).0 >= LAPACK_THRESH,
        "a perturbed R entry"
    );
    let mut tau = f.tau.clone();
    tau[0] *= 0.999;
    assert!(
        lapack_ratios(n, &a, &f.h, &tau).1 >= LAPACK_THRESH,
        "a wrong tau"
    );
}
