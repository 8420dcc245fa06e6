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

    /// The matrix is finite but its factorization is not: some entry of `R`
    /// (or of a reflector) does not fit `f32`, as when a column's 2-norm
    /// exceeds `f32::MAX` (`[[MAX, 1], [MAX, 1]]`). Its `H` and `tau` are
    /// filled with NaN, as for [`Info::NON_FINITE`]; the other matrices of
    /// the batch are factored as usual. Scaling the matrix down (by a power
    /// of two, which is exact) and scaling `R` back up is the remedy when
    /// the caller can hold `R` in wider precision.
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
