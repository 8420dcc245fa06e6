//! Checks for `qr_verify::gate::check` on arbitrary `(A, H, tau)`: it never
//! panics, it checks lengths, it never passes a non-finite input, and its
//! values agree with a plain unblocked `f64` re-computation written here.
//!
//! Inputs are either arbitrary bits or a valid factorization (qr-verify's
//! `f64` reference, rounded to `f32`) with a few entries overwritten, so
//! that both sides of the pass/fail boundary are reached.

use qr_core::{QrError, Shape};
use qr_verify::gate::{self, MatrixGate};
use qr_verify::reference::geqr2_f64;

use super::decode::Reader;

/// Largest order the target draws (the oracle below is `O(n^3)` per matrix).
pub const MAX_N: usize = 24;

/// Decodes one input and checks it; panics on a contract violation.
pub fn check(data: &[u8]) {
    let mut r = Reader::new(data);
    let batch = r.below(4);
    let n = r.below(MAX_N + 1);
    let shape = Shape::new(batch, n).unwrap();
    let derived = r.u8() % 4 != 0;
    let (mut a, mut h, mut tau) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..batch {
        let m: Vec<f32> = (0..n * n).map(|_| r.f32_finite()).collect();
        if derived {
            let wide: Vec<f64> = m.iter().map(|&x| f64::from(x)).collect();
            let (hb, tb) = geqr2_f64(n, &wide);
            h.extend(hb.iter().map(|&x| x as f32));
            tau.extend(tb.iter().map(|&x| x as f32));
        } else {
            h.extend((0..n * n).map(|_| r.f32_any()));
            tau.extend((0..n).map(|_| r.f32_any()));
        }
        a.extend(m);
    }
    for _ in 0..r.below(6) {
        let value = r.f32_any();
        let target = match r.u8() % 3 {
            0 => &mut a,
            1 => &mut h,
            _ => &mut tau,
        };
        if !target.is_empty() {
            let at = r.below(target.len());
            target[at] = value;
        }
    }
    // The last byte may shorten or lengthen one buffer.
    match r.u8() {
        0xfd => drop(a.pop()),
        0xfe => h.push(0.0),
        0xff => drop(tau.pop()),
        _ => {}
    }
    check_gate(shape, &a, &h, &tau);
}

fn check_gate(shape: Shape, a: &[f32], h: &[f32], tau: &[f32]) {
    let result = gate::check(shape, a, h, tau);
    let mismatch = [
        ("h", shape.a_len(), h.len()),
        ("tau", shape.tau_len(), tau.len()),
        ("a", shape.a_len(), a.len()),
    ]
    .into_iter()
    .find(|&(_, want, got)| want != got);
    let report = match (result, mismatch) {
        (Ok(report), None) => report,
        (
            Err(QrError::LengthMismatch {
                what,
                expected,
                actual,
            }),
            Some(m),
        ) => {
            assert_eq!((what, expected, actual), m);
            return;
        }
        (other, m) => panic!("{shape}: mismatch {m:?}, gate returned {other:?}"),
    };
    let n = shape.n();
    let count = if n == 0 { 0 } else { shape.batch() };
    assert_eq!(report.matrices.len(), count);
    for (b, g) in report.matrices.iter().enumerate() {
        let am = &a[b * n * n..(b + 1) * n * n];
        let hm = &h[b * n * n..(b + 1) * n * n];
        let tm = &tau[b * n..(b + 1) * n];
        let finite = am.iter().chain(hm).chain(tm).all(|x| x.is_finite());
        if !finite {
            assert!(
                !g.passes_gate(),
                "matrix {b}: non-finite input passed: {g:?}"
            );
            continue;
        }
        let mine = plain_gate(n, am, hm, tm);
        agree(b, g, &mine);
    }
}

/// The gate's values and the plain re-computation agree wherever `Q` is
/// anywhere near orthogonal (elsewhere both are far past the gate, and
/// differently rounded).
fn agree(b: usize, g: &MatrixGate, mine: &MatrixGate) {
    // NaN counts as far from orthogonal.
    let near_orthogonal = mine.orth < 1e4;
    if !near_orthogonal {
        assert!(
            !g.passes_gate(),
            "matrix {b}: gate passed {g:?}, plain gives {mine:?}"
        );
        return;
    }
    let close = |x: f64, y: f64| x == y || (x - y).abs() <= 1e-6 * (1.0 + y.abs());
    assert!(
        close(g.orth, mine.orth) && close(g.sfr, mine.sfr) && close(g.recon, mine.recon),
        "matrix {b}: gate {g:?} but plain re-computation {mine:?}"
    );
}

/// Textbook `f64` gate: `Q` reflector by reflector, dense products, no
/// blocking and no shared code with qr-verify.
fn plain_gate(n: usize, a: &[f32], h: &[f32], tau: &[f32]) -> MatrixGate {
    let at = |m: &[f32], i: usize, j: usize| f64::from(m[i * n + j]);
    let mut q = vec![0.0f64; n * n];
    (0..n).for_each(|i| q[i * n + i] = 1.0);
    // Q = H_0 (H_1 (... H_{n-1})): apply the reflectors to I from the left, last first.
    for j in (0..n).rev() {
        let t = f64::from(tau[j]);
        let v = |i: usize| match i.cmp(&j) {
            std::cmp::Ordering::Less => 0.0,
            std::cmp::Ordering::Equal => 1.0,
            std::cmp::Ordering::Greater => at(h, i, j),
        };
        for c in 0..n {
            let w: f64 = (j..n).map(|i| v(i) * q[i * n + c]).sum();
            (j..n).for_each(|i| q[i * n + c] -= t * v(i) * w);
        }
    }
    // NaN must survive the maximum (`f64::max` would drop it).
    let nan_max = |m: f64, x: f64| {
        if m.is_nan() || x.is_nan() {
            f64::NAN
        } else {
            m.max(x)
        }
    };
    let norm1 = |f: &dyn Fn(usize, usize) -> f64| {
        (0..n)
            .map(|j| (0..n).map(|i| f(i, j).abs()).sum::<f64>())
            .fold(0.0, nan_max)
    };
    let r = |i: usize, j: usize| if i <= j { at(h, i, j) } else { 0.0 };
    let qta = |i: usize, j: usize| (0..n).map(|k| q[k * n + i] * at(a, k, j)).sum::<f64>();
    let qtq = |i: usize, j: usize| (0..n).map(|k| q[k * n + i] * q[k * n + j]).sum::<f64>();
    let qr = |i: usize, j: usize| (0..n).map(|k| q[i * n + k] * r(k, j)).sum::<f64>();
    let eps_n = n as f64 * qr_core::EPS_F32;
    let scale_a = eps_n * norm1(&|i, j| at(a, i, j));
    let scaled = |x: f64, by: f64| {
        if by > 0.0 {
            x / by
        } else if x == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    };
    MatrixGate {
        sfr: scaled(norm1(&|i, j| r(i, j) - qta(i, j)), scale_a),
        orth: scaled(
            norm1(&|i, j| qtq(i, j) - if i == j { 1.0 } else { 0.0 }),
            eps_n,
        ),
        recon: scaled(norm1(&|i, j| qr(i, j) - at(a, i, j)), scale_a),
        leakage: scaled(norm1(&|i, j| if i > j { qta(i, j) } else { 0.0 }), scale_a),
    }
}
