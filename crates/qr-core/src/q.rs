//! Forming and applying `Q` from `(H, tau)`: the views, options and owned
//! results of `orgqr`, `ormqr` and `qr` (the crate documentation states
//! their contract).

use crate::backend::try_alloc;
use crate::{Info, QrError, Shape};

/// The reflectors of a batch, exactly as [`geqrf`](crate::geqrf) returns
/// them: `H` (`batch * n * n`, row-major; only the part strictly below the
/// diagonal is read) and `tau` (`n` per matrix).
#[derive(Clone, Copy, Debug)]
pub struct Reflectors<'a> {
    shape: Shape,
    h: &'a [f32],
    tau: &'a [f32],
}

impl<'a> Reflectors<'a> {
    /// Wraps `h` and `tau` after checking their lengths against `shape`.
    pub fn new(shape: Shape, h: &'a [f32], tau: &'a [f32]) -> Result<Self, QrError> {
        Shape::check_len("h", shape.a_len(), h.len())?;
        Shape::check_len("tau", shape.tau_len(), tau.len())?;
        Ok(Self { shape, h, tau })
    }

    /// The batch's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// `H`, matrix after matrix.
    pub fn h(&self) -> &'a [f32] {
        self.h
    }

    /// `tau`, `n` per matrix.
    pub fn tau(&self) -> &'a [f32] {
        self.tau
    }

    /// `(h_b, tau_b)` per matrix. Yields nothing when `n == 0`.
    pub fn matrices(&self) -> impl ExactSizeIterator<Item = (&'a [f32], &'a [f32])> + 'a {
        let (n, len) = (self.shape.n(), self.shape.matrix_len());
        let count = if len == 0 { 0 } else { self.shape.batch() };
        let (h, tau) = (self.h, self.tau);
        (0..count).map(move |b| (&h[b * len..(b + 1) * len], &tau[b * n..(b + 1) * n]))
    }

    /// `true` when the part of matrix `b` that defines its `Q` (the entries
    /// strictly below the diagonal and `tau`) is finite. A matrix for which
    /// this is `false` gets [`Info::NON_FINITE`] from `orgqr` and `ormqr`.
    pub fn is_finite(h: &[f32], tau: &[f32], n: usize) -> bool {
        let below = h
            .chunks_exact(n.max(1))
            .take(n)
            .enumerate()
            .fold(0u32, |acc, (i, row)| acc | non_finite_flags(&row[..i]));
        (non_finite_flags(&tau[..n]) | below) == 0
    }

    /// Each matrix's status when nothing is computed from its reflectors
    /// (an `ormqr` with `k = 0`): [`Info::NON_FINITE`] where
    /// [`Reflectors::is_finite`] is false, else [`Info::OK`]. `info` holds
    /// one entry per matrix.
    pub fn statuses(&self, info: &mut [Info]) {
        let n = self.shape.n();
        if n == 0 {
            info.fill(Info::OK);
            return;
        }
        for ((h, tau), i) in self.matrices().zip(info.iter_mut()) {
            *i = if Self::is_finite(h, tau, n) {
                Info::OK
            } else {
                Info::NON_FINITE
            };
        }
    }
}

/// `true` when every element of `x` is finite. Vectorizes, where
/// `x.iter().all(|v| v.is_finite())` stops at the first failure and so runs
/// one element at a time: on the `O(n^2)` checks around the CPU's `orgqr`
/// that cost a tenth of a 176 x 176 `Q` (measured with `perf`).
#[inline]
pub fn all_finite(x: &[f32]) -> bool {
    non_finite_flags(x) == 0
}

/// Non-zero when some element of `x` is an infinity or a NaN: an integer OR
/// over "exponent all ones" flags, with no early exit and no floating-point
/// reassociation to forbid vector code (even SSE2).
#[inline]
fn non_finite_flags(x: &[f32]) -> u32 {
    /// The exponent bits of an `f32`: all ones for an infinity or a NaN.
    const EXP: u32 = 0x7f80_0000;
    x.iter()
        .fold(0u32, |acc, v| acc | u32::from(v.to_bits() & EXP == EXP))
}

/// Which side of `C` the orthogonal factor multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// `op(Q) C`, with `C` of `n x k`.
    Left,
    /// `C op(Q)`, with `C` of `k x n`.
    Right,
}

/// Whether `Q` or `Q^T` is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// `op(Q) = Q`.
    No,
    /// `op(Q) = Q^T`.
    Yes,
}

/// What `ormqr` computes: `op(Q) C` or `C op(Q)`, as LAPACK's `SIDE` and
/// `TRANS` arguments say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ApplyQ {
    /// Left (`op(Q) C`) or right (`C op(Q)`).
    pub side: Side,
    /// `Q` or `Q^T`.
    pub transpose: Transpose,
}

impl ApplyQ {
    /// `Q^T C`, the product that projects onto `Q`'s basis (the torch
    /// `ormqr(..., left=True, transpose=True)` call).
    pub const QT_LEFT: ApplyQ = ApplyQ {
        side: Side::Left,
        transpose: Transpose::Yes,
    };

    /// The four combinations, for tests and sweeps.
    pub const ALL: [ApplyQ; 4] = [
        ApplyQ {
            side: Side::Left,
            transpose: Transpose::No,
        },
        ApplyQ::QT_LEFT,
        ApplyQ {
            side: Side::Right,
            transpose: Transpose::No,
        },
        ApplyQ {
            side: Side::Right,
            transpose: Transpose::Yes,
        },
    ];

    /// Elements of `C` for `batch` matrices of order `n` and `k` columns
    /// (left) or rows (right), or [`QrError::SizeOverflow`].
    pub fn c_len(shape: Shape, k: usize) -> Result<usize, QrError> {
        let overflow = QrError::SizeOverflow {
            batch: shape.batch(),
            n: shape.n(),
        };
        let len = shape
            .n()
            .checked_mul(k)
            .and_then(|per| per.checked_mul(shape.batch()))
            .ok_or(overflow.clone())?;
        if len > isize::MAX as usize / std::mem::size_of::<f32>() {
            return Err(overflow);
        }
        Ok(len)
    }

    /// Checks the lengths of an `ormqr` call's `C` and `info`.
    pub fn check(shape: Shape, k: usize, c: usize, info: usize) -> Result<(), QrError> {
        Shape::check_len("c", Self::c_len(shape, k)?, c)?;
        Shape::check_len("info", shape.info_len(), info)
    }
}

impl std::fmt::Display for ApplyQ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = match self.transpose {
            Transpose::No => "Q",
            Transpose::Yes => "Q^T",
        };
        match self.side {
            Side::Left => write!(f, "{q} C"),
            Side::Right => write!(f, "C {q}"),
        }
    }
}

/// Owned result of [`orgqr`](crate::orgqr) or [`ormqr`](crate::ormqr): a
/// batch of dense row-major matrices and one [`Info`] per matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrices {
    /// Rows of each matrix.
    pub rows: usize,
    /// Columns of each matrix.
    pub cols: usize,
    /// The matrices, one after the other, row-major.
    pub data: Vec<f32>,
    /// One status per matrix.
    pub info: Vec<Info>,
}

impl Matrices {
    /// `true` when every matrix was computed.
    pub fn all_ok(&self) -> bool {
        self.info.iter().all(|i| i.is_ok())
    }
}

/// Owned result of [`qr`](crate::qr): `Q` and `R`, each `batch * n * n`
/// row-major, and one [`Info`] per matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct QrFactors {
    /// The shape factored.
    pub shape: Shape,
    /// The orthogonal factors.
    pub q: Vec<f32>,
    /// The upper triangular factors (zero below the diagonal), with the
    /// signs of `geqrf`'s `R`.
    pub r: Vec<f32>,
    /// One status per matrix, as `geqrf` reports it.
    pub info: Vec<Info>,
}

impl QrFactors {
    /// Zero-filled outputs for `shape`, allocated fallibly.
    pub fn zeroed(shape: Shape) -> Result<Self, QrError> {
        Ok(Self {
            shape,
            q: try_alloc(shape.a_len(), 0.0)?,
            r: try_alloc(shape.a_len(), 0.0)?,
            info: try_alloc(shape.info_len(), Info::OK)?,
        })
    }

    /// `true` when every matrix was factored.
    pub fn all_ok(&self) -> bool {
        self.info.iter().all(|i| i.is_ok())
    }

    /// Checks the lengths of a `qr_into` call's `q`, `r` and `info`
    /// against `shape`.
    pub fn check(shape: Shape, q: usize, r: usize, info: usize) -> Result<(), QrError> {
        Shape::check_len("q", shape.a_len(), q)?;
        Shape::check_len("r", shape.a_len(), r)?;
        Shape::check_len("info", shape.info_len(), info)
    }
}

/// Copies the upper triangle of each `H` into `r` and zeroes the rest;
/// a matrix whose `info` is not OK gets NaN throughout, as its `H` holds.
pub fn upper_triangle(shape: Shape, h: &[f32], info: &[Info], r: &mut [f32]) {
    let n = shape.n();
    if shape.is_empty() {
        return;
    }
    for ((hb, rb), inf) in h
        .chunks_exact(n * n)
        .zip(r.chunks_exact_mut(n * n))
        .zip(info)
    {
        if !inf.is_ok() {
            rb.fill(f32::NAN);
            continue;
        }
        for (i, (hr, rr)) in hb.chunks_exact(n).zip(rb.chunks_exact_mut(n)).enumerate() {
            rr[..i].fill(0.0);
            rr[i..].copy_from_slice(&hr[i..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflector_finiteness_reads_only_what_q_uses() {
        let n = 3;
        let mut h = vec![0.0f32; 9];
        let tau = vec![1.0f32; 3];
        // R's part (on and above the diagonal) does not define Q.
        h[0] = f32::NAN;
        h[2] = f32::INFINITY;
        assert!(Reflectors::is_finite(&h, &tau, n));
        h[7] = f32::NAN; // (2, 1), below the diagonal
        assert!(!Reflectors::is_finite(&h, &tau, n));
        h[7] = 0.0;
        assert!(!Reflectors::is_finite(&h, &[1.0, f32::NAN, 0.0], n));
    }

    #[test]
    fn all_finite_agrees_with_is_finite() {
        for s in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            -0.0,
            1e-45,
        ] {
            for pos in 0..37 {
                let mut x = vec![0.5f32; 37];
                x[pos] = s;
                assert_eq!(all_finite(&x), x.iter().all(|v| v.is_finite()), "{pos} {s}");
            }
        }
    }

    #[test]
    fn reflector_finiteness_agrees_with_its_definition() {
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            -0.0,
            1e-45,
        ];
        for n in [1usize, 2, 5, 33] {
            for pos in 0..n * n + n {
                for s in specials {
                    let (mut h, mut tau) = (vec![0.5f32; n * n], vec![1.0f32; n]);
                    if pos < n * n {
                        h[pos] = s;
                    } else {
                        tau[pos - n * n] = s;
                    }
                    let want = tau.iter().all(|t| t.is_finite())
                        && (1..n).all(|i| h[i * n..i * n + i].iter().all(|x| x.is_finite()));
                    assert_eq!(
                        Reflectors::is_finite(&h, &tau, n),
                        want,
                        "n={n} pos={pos} {s}"
                    );
                }
            }
        }
        assert!(Reflectors::is_finite(&[], &[], 0));
    }

    #[test]
    fn statuses_judge_each_matrix_alone() {
        let s = Shape::new(3, 2).unwrap();
        let mut h = vec![0.0f32; 12];
        h[4 + 2] = f32::NAN; // matrix 1, (1, 0)
        let tau = [1.0f32; 6];
        let mut info = [Info(7); 3];
        Reflectors::new(s, &h, &tau).unwrap().statuses(&mut info);
        assert_eq!(info, [Info::OK, Info::NON_FINITE, Info::OK]);
        let empty = Shape::new(2, 0).unwrap();
        let mut info = [Info(7); 2];
        Reflectors::new(empty, &[], &[])
            .unwrap()
            .statuses(&mut info);
        assert_eq!(info, [Info::OK; 2]);
    }

    #[test]
    fn c_lengths_overflow_as_errors() {
        let s = Shape::new(2, 3).unwrap();
        assert_eq!(ApplyQ::c_len(s, 5), Ok(30));
        assert_eq!(ApplyQ::c_len(s, 0), Ok(0));
        assert!(matches!(
            ApplyQ::c_len(s, usize::MAX),
            Err(QrError::SizeOverflow { .. })
        ));
        assert!(matches!(
            ApplyQ::check(s, 5, 29, 2),
            Err(QrError::LengthMismatch { what: "c", .. })
        ));
    }

    #[test]
    fn upper_triangle_zeroes_below_and_poisons_failed_matrices() {
        let s = Shape::new(2, 2).unwrap();
        let h = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let mut r = [9.0f32; 8];
        upper_triangle(s, &h, &[Info::OK, Info::NON_FINITE], &mut r);
        assert_eq!(&r[..4], &[1.0, 2.0, 0.0, 4.0]);
        assert!(r[4..].iter().all(|x| x.is_nan()));
    }
}
