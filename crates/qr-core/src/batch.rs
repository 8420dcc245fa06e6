//! Validated views over contiguous row-major batches.

use crate::{QrError, Shape};

/// A read-only batch of `n x n` row-major `f32` matrices.
#[derive(Clone, Copy, Debug)]
pub struct BatchRef<'a> {
    shape: Shape,
    data: &'a [f32],
}

impl<'a> BatchRef<'a> {
    /// Wraps `data`, which must hold exactly `shape.a_len()` elements.
    pub fn new(shape: Shape, data: &'a [f32]) -> Result<Self, QrError> {
        Shape::check_len("a", shape.a_len(), data.len())?;
        Ok(Self { shape, data })
    }

    /// The batch's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// All elements, matrix after matrix.
    pub fn as_slice(&self) -> &'a [f32] {
        self.data
    }

    /// Matrix `b`, row-major. Panics if `b >= batch` (an indexing bug, not input).
    pub fn matrix(&self, b: usize) -> &'a [f32] {
        let len = self.shape.matrix_len();
        &self.data[b * len..(b + 1) * len]
    }

    /// The matrices in order. Yields nothing when `n == 0`.
    pub fn matrices(&self) -> impl ExactSizeIterator<Item = &'a [f32]> + 'a {
        let len = self.shape.matrix_len();
        let count = if len == 0 { 0 } else { self.shape.batch() };
        let data = self.data;
        (0..count).map(move |b| &data[b * len..(b + 1) * len])
    }
}

/// The caller-owned outputs of a batched factorization: `H` (same layout as
/// the input), `tau` (`n` per matrix) and one [`Info`](crate::Info) per matrix.
#[derive(Debug)]
pub struct BatchMut<'a> {
    shape: Shape,
    h: &'a mut [f32],
    tau: &'a mut [f32],
    info: &'a mut [crate::Info],
}

impl<'a> BatchMut<'a> {
    /// Wraps the three output buffers after checking their lengths.
    pub fn new(
        shape: Shape,
        h: &'a mut [f32],
        tau: &'a mut [f32],
        info: &'a mut [crate::Info],
    ) -> Result<Self, QrError> {
        Shape::check_len("h", shape.a_len(), h.len())?;
        Shape::check_len("tau", shape.tau_len(), tau.len())?;
        Shape::check_len("info", shape.info_len(), info.len())?;
        Ok(Self {
            shape,
            h,
            tau,
            info,
        })
    }

    /// The batch's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The three buffers, whole.
    pub fn parts(&mut self) -> (&mut [f32], &mut [f32], &mut [crate::Info]) {
        (self.h, self.tau, self.info)
    }

    /// One output triple per matrix: `(h_b, tau_b, info_b)`, so that matrices
    /// can be factored independently (e.g. with rayon's `par_bridge` or by
    /// zipping chunks). Yields nothing when `n == 0`.
    pub fn matrices_mut(
        &mut self,
    ) -> impl Iterator<Item = (&mut [f32], &mut [f32], &mut crate::Info)> + '_ {
        let len = self.shape.matrix_len();
        let n = self.shape.n();
        let count = if len == 0 { 0 } else { self.shape.batch() };
        self.h
            .chunks_exact_mut(len.max(1))
            .zip(self.tau.chunks_exact_mut(n.max(1)))
            .zip(self.info.iter_mut())
            .take(count)
            .map(|((h, t), i)| (h, t, i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Info;

    #[test]
    fn views_check_lengths() {
        let s = Shape::new(2, 3).unwrap();
        let a = vec![0.0f32; 18];
        assert!(BatchRef::new(s, &a).is_ok());
        assert!(matches!(
            BatchRef::new(s, &a[..17]),
            Err(QrError::LengthMismatch { what: "a", .. })
        ));
        let (mut h, mut t, mut i) = (vec![0.0; 18], vec![0.0; 6], vec![Info::OK; 2]);
        assert!(BatchMut::new(s, &mut h, &mut t, &mut i).is_ok());
        let mut short = vec![0.0; 5];
        assert!(matches!(
            BatchMut::new(s, &mut h, &mut short, &mut i),
            Err(QrError::LengthMismatch { what: "tau", .. })
        ));
    }

    #[test]
    fn per_matrix_iteration() {
        let s = Shape::new(3, 2).unwrap();
        let a: Vec<f32> = (0..12).map(|x| x as f32).collect();
        let v = BatchRef::new(s, &a).unwrap();
        assert_eq!(v.matrices().count(), 3);
        assert_eq!(v.matrix(1), &[4.0, 5.0, 6.0, 7.0]);
        let (mut h, mut t, mut i) = (vec![0.0; 12], vec![0.0; 6], vec![Info::OK; 3]);
        let mut out = BatchMut::new(s, &mut h, &mut t, &mut i).unwrap();
        for (b, (h, t, info)) in out.matrices_mut().enumerate() {
            h.fill(b as f32);
            t.fill(-(b as f32));
            *info = Info(b as i32);
        }
        assert_eq!(&h[4..8], &[1.0; 4]);
        assert_eq!(&t[4..6], &[-2.0; 2]);
        assert_eq!(i[2], Info(2));
    }

    #[test]
    fn empty_shapes_yield_nothing() {
        let s = Shape::new(4, 0).unwrap();
        let v = BatchRef::new(s, &[]).unwrap();
        assert_eq!(v.matrices().count(), 0);
        let mut info = vec![Info::OK; 4];
        let mut out = BatchMut::new(s, &mut [], &mut [], &mut info).unwrap();
        assert_eq!(out.matrices_mut().count(), 0);
    }
}
