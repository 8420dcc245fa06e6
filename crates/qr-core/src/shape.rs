//! Validated batch shapes.

use crate::QrError;

/// A validated `(batch, n)` pair: `batch` matrices of `n x n` `f32`.
///
/// Construction checks that every derived length (elements, bytes of `H`,
/// `tau` and `info`) fits in `isize`, so that code holding a `Shape` can
/// multiply without overflow checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    batch: usize,
    n: usize,
}

impl Shape {
    /// Validates `batch` and `n`. Zero for either is valid (an empty batch).
    pub fn new(batch: usize, n: usize) -> Result<Self, QrError> {
        let overflow = QrError::SizeOverflow { batch, n };
        let per_matrix = n.checked_mul(n).ok_or(overflow.clone())?;
        let elems = per_matrix.checked_mul(batch).ok_or(overflow.clone())?;
        let bytes = elems
            .checked_mul(std::mem::size_of::<f32>())
            .ok_or(overflow.clone())?;
        // With n == 0 the matrices are empty but `info` still holds `batch`
        // entries, so its bytes need their own check.
        let info_bytes = batch
            .checked_mul(std::mem::size_of::<crate::Info>())
            .ok_or(overflow.clone())?;
        if bytes > isize::MAX as usize || info_bytes > isize::MAX as usize {
            return Err(overflow);
        }
        Ok(Self { batch, n })
    }

    /// Number of matrices.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Order of each (square) matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// `true` when there is nothing to factor (`batch == 0` or `n == 0`).
    pub fn is_empty(&self) -> bool {
        self.batch == 0 || self.n == 0
    }

    /// Elements of one matrix, `n * n`.
    pub fn matrix_len(&self) -> usize {
        self.n * self.n
    }

    /// Elements of the whole input or of `H`, `batch * n * n`.
    pub fn a_len(&self) -> usize {
        self.batch * self.n * self.n
    }

    /// Elements of `tau`, `batch * n`.
    pub fn tau_len(&self) -> usize {
        self.batch * self.n
    }

    /// Elements of `info`, one per matrix.
    pub fn info_len(&self) -> usize {
        self.batch
    }

    /// Bytes of the input (equal to the bytes of `H`).
    pub fn a_bytes(&self) -> usize {
        self.a_len() * std::mem::size_of::<f32>()
    }

    /// The same `n` with another batch size (used to cap a batch); validated.
    pub fn with_batch(&self, batch: usize) -> Result<Self, QrError> {
        Self::new(batch, self.n)
    }

    /// Checks that a buffer named `what` has exactly `expected` elements.
    pub fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<(), QrError> {
        if expected == actual {
            Ok(())
        } else {
            Err(QrError::LengthMismatch {
                what,
                expected,
                actual,
            })
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.batch, self.n, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        let s = Shape::new(3, 5).unwrap();
        assert_eq!(s.a_len(), 75);
        assert_eq!(s.tau_len(), 15);
        assert_eq!(s.info_len(), 3);
        assert_eq!(s.a_bytes(), 300);
        assert!(!s.is_empty());
        assert!(Shape::new(0, 5).unwrap().is_empty());
        assert!(Shape::new(5, 0).unwrap().is_empty());
    }

    #[test]
    fn overflow_is_an_error() {
        assert!(matches!(
            Shape::new(usize::MAX, 2),
            Err(QrError::SizeOverflow { .. })
        ));
        assert!(Shape::new(1, usize::MAX).is_err());
        let side = 1usize << 31;
        assert!(Shape::new(1, side).is_err());
        assert!(Shape::new(2, 1 << 30).is_err());
        assert!(Shape::new(1 << 62, 0).is_err());
        assert!(Shape::new(usize::MAX, 0).is_err());
        assert!(Shape::new(isize::MAX as usize / 4, 0).is_ok());
    }
}
