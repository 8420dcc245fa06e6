//! Per-matrix status codes, in the batched-LAPACK habit (MAGMA's
//! `info_array`, cuSOLVER's `devInfo`).

use std::fmt;

/// Status of one matrix of a batch after a factorization.
///
/// `#[repr(transparent)]` over `i32`, so a device can write the array directly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Info(pub i32);

impl Info {
    /// The matrix was factored; `H` and `tau` hold its `geqrf`.
    pub const OK: Info = Info(0);

    /// The matrix holds a NaN or an infinity. It was not factored: its `H`
    /// and `tau` are filled with NaN so that no one uses them by accident.
    /// The other matrices of the batch are factored as usual. From `orgqr`
    /// and `ormqr`: the reflectors (`tau`, or `H` below the diagonal) hold a
    /// NaN or an infinity; the result of that matrix is NaN.
    pub const NON_FINITE: Info = Info(1);

    /// The matrix is finite but its factorization cannot be represented in
    /// `f32`: some entry of `R` exceeds `f32::MAX` (`R[0][0] = -sqrt(2) MAX`
    /// for `[[MAX, 1], [MAX, 1]]`; `R[0][1] = -1.13 MAX` for
    /// `[[1, 0.8 MAX], [1, 0.8 MAX]]`). `R` is the only factor that can:
    /// the stored reflector entries are at most 1 in magnitude and `tau` is
    /// in `[0, 2]`. Its `H` and `tau` are filled with NaN, as for
    /// [`Info::NON_FINITE`]; the other matrices of the batch are factored as
    /// usual.
    ///
    /// It is never a margin, nor an intermediate's overflow: a matrix whose
    /// `R` fits is factored (`Info::OK`, finite, within the gate) even when
    /// a column's 2-norm exceeds `f32::MAX` or an `f32` trailing update
    /// would overflow, by factoring it scaled by a power of two and scaling
    /// `R` back. Since `|R_ij| <= ||a_j||`, a matrix whose columns all have
    /// 2-norms below `f32::MAX` is always factored, and one whose first
    /// column's is above it (`|R_00| = ||a_0||`) never is; between, `R` is
    /// the backend's own (ill-conditioned leading columns leave `R_ij` free
    /// within the backward error), and entries within rounding of
    /// `f32::MAX` may go either way. (LAPACK's `sgeqrf` has no such code: OpenBLAS returns infinities
    /// with `info = 0` for both kinds of matrix.) qr-cpu follows this rule;
    /// qr-gpu does not scale yet and still flags a matrix whose `f32`
    /// intermediates overflow (`docs/RELIABILITY.md`). Scaling the matrix down
    /// and scaling `R` back up in wider precision is the remedy for a
    /// caller that can hold such an `R`.
    pub const OVERFLOW: Info = Info(2);

    /// `true` for [`Info::OK`].
    pub fn is_ok(self) -> bool {
        self == Self::OK
    }

    /// A short description of the code.
    pub fn describe(self) -> &'static str {
        match self {
            Self::OK => "factored",
            Self::NON_FINITE => "not factored: the matrix holds a NaN or an infinity",
            Self::OVERFLOW => "not factored: R (or a reflector) does not fit f32",
            _ => "unknown status code",
        }
    }
}

impl fmt::Display for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.0, self.describe())
    }
}
