//! nalgebra's Householder QR (`QR::new`) as a peer, rayon across the batch.
//!
//! nalgebra factors unblocked and keeps its reflectors private (they are
//! unit vectors with a sign per step, not `geqrf`'s `v[0] = 1` form), so the
//! peer returns `R` only: the upper triangle of `h` holds nalgebra's `R`
//! (diagonal `>= 0`), the lower triangle and `tau` are zero. It has no inner
//! parallelism, hence the one configuration.

use nalgebra::DMatrix;
use nalgebra::linalg::QR;
use qr_core::{Backend, BatchMut, BatchRef, QrError};

use super::{Spread, for_each_matrix, transpose_into};

/// nalgebra's QR of every matrix, one matrix per rayon task.
#[derive(Clone, Copy, Debug)]
pub struct NalgebraPeer;

impl Backend for NalgebraPeer {
    fn name(&self) -> &str {
        "nalgebra-batch"
    }

    fn describe(&self) -> String {
        format!(
            "nalgebra QR::new, rayon across the batch on {} threads",
            rayon::current_num_threads()
        )
    }

    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError> {
        let n = a.shape().n();
        for_each_matrix(a, out, Spread::Batch, |a, h, tau| {
            let r = QR::new(DMatrix::<f32>::from_row_slice(n, n, a)).unpack_r();
            // nalgebra is column-major: its storage transposed is row-major R.
            transpose_into(n, r.as_slice(), h);
            tau.fill(0.0);
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qr_core::{Shape, geqrf};
    use qr_verify::{Case, Spec, diag_r_mismatch, generate};

    #[test]
    fn nalgebra_returns_r_with_the_true_diagonal() {
        for n in [1, 5, 40, 97] {
            let spec = Spec {
                batch: 2,
                n,
                cond: 1.0,
                case: Case::Dense,
            };
            let a = generate(&spec, 3);
            let f = geqrf(&NalgebraPeer, Shape::new(2, n).unwrap(), &a).unwrap();
            for b in 0..2 {
                let m = b * n * n..(b + 1) * n * n;
                let mismatch = diag_r_mismatch(n, &a[m.clone()], &f.h[m.clone()]);
                assert!(mismatch < 1e-4, "n={n}: |diag R| mismatch {mismatch}");
                let h = &f.h[m];
                assert!((0..n).all(|i| (0..i).all(|j| h[i * n + j] == 0.0)));
            }
        }
    }
}
