//! nalgebra's Householder QR (`QR::new`) as a peer, rayon across the batch.
//!
//! nalgebra factors unblocked and keeps its reflectors private (they are
//! unit vectors with a sign per step, not `geqrf`'s `v[0] = 1` form), so the
//! peer returns `R` only: the upper triangle of `h` holds nalgebra's `R`
//! (diagonal `>= 0`), the lower triangle and `tau` are zero. It has no inner
//! parallelism, hence the one configuration.
//!
//! With no `(H, tau)` input, the `Q` operations are timed as a nalgebra
//! user gets them: `q()` (orgqr) and `q_tr_mul` (ormqr, `Q^T C` only: it
//! has no other product) of its own `QR`, computed untimed beforehand, and
//! `QR::new` with `q()` and `r()` for qr.

use nalgebra::linalg::QR;
use nalgebra::{DMatrix, Dyn};
use qr_core::{
    ApplyQ, Backend, BatchMut, BatchRef, BenchOptions, BenchTiming, Operation, QrError, Shape,
};
use rayon::prelude::*;

use super::{Spread, for_each_matrix, transpose_into, write_row_major};

/// nalgebra's QR of every matrix, one matrix per rayon task.
#[derive(Clone, Copy, Debug)]
pub struct NalgebraPeer;

/// What [`NalgebraPeer`]'s `bench_op` times.
pub fn times(op: Operation) -> &'static str {
    match op {
        Operation::Geqrf => "geqrf",
        Operation::Orgqr => "q() of its own QR (QR::new untimed): no geqrf-form input",
        Operation::Ormqr(_) => "q_tr_mul (Q^T C only) of its own QR (QR::new untimed)",
        Operation::Qr => "QR::new, q() and r()",
    }
}

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

    fn bench_op(
        &self,
        op: Operation,
        shape: Shape,
        inputs: &[&[f32]],
        opts: &BenchOptions,
    ) -> Result<BenchTiming, QrError> {
        let (n, len) = (shape.n(), shape.matrix_len());
        if shape.is_empty() && op != Operation::Geqrf {
            return qr_core::time_on_host(opts, inputs.len(), || Ok(()));
        }
        match op {
            Operation::Geqrf => self.bench(shape, inputs, opts),
            Operation::Qr => {
                let mut out = vec![0.0f32; shape.a_len()];
                let mut r = vec![0.0f32; shape.a_len()];
                qr_core::time_on_host(opts, inputs.len(), || {
                    for a in inputs {
                        a.par_chunks(len)
                            .zip(out.par_chunks_mut(len))
                            .zip(r.par_chunks_mut(len))
                            .for_each(|((a, q), r)| {
                                let f = QR::new(DMatrix::<f32>::from_row_slice(n, n, a));
                                let (qm, rm) = (f.q(), f.r());
                                write_row_major(n, n, |i, j| qm[(i, j)], q);
                                write_row_major(n, n, |i, j| rm[(i, j)], r);
                            });
                    }
                    Ok(())
                })
            }
            Operation::Orgqr | Operation::Ormqr(ApplyQ::QT_LEFT) => {
                let factors: Vec<Vec<QR<f32, Dyn, Dyn>>> = inputs
                    .iter()
                    .map(|a| {
                        a.par_chunks(len)
                            .map(|m| QR::new(DMatrix::from_row_slice(n, n, m)))
                            .collect()
                    })
                    .collect();
                let mut out = vec![0.0f32; shape.a_len()];
                qr_core::time_on_host(opts, inputs.len(), || {
                    for (a, fs) in inputs.iter().zip(&factors) {
                        fs.par_iter()
                            .zip(a.par_chunks(len))
                            .zip(out.par_chunks_mut(len))
                            .for_each(|((f, a), out)| {
                                let m = match op {
                                    Operation::Orgqr => f.q(),
                                    _ => {
                                        let mut c = DMatrix::from_row_slice(n, n, a);
                                        f.q_tr_mul(&mut c);
                                        c
                                    }
                                };
                                write_row_major(n, n, |i, j| m[(i, j)], out);
                            });
                    }
                    Ok(())
                })
            }
            Operation::Ormqr(other) => Err(QrError::Unsupported {
                message: format!("nalgebra applies Q only as Q^T C (q_tr_mul), not {other}"),
            }),
        }
    }
}

/// nalgebra's `Q` of one row-major matrix, row-major: what its `orgqr`
/// timing computes, for the tests.
#[cfg(test)]
fn q_of(n: usize, a: &[f32]) -> Vec<f32> {
    let q = QR::new(DMatrix::<f32>::from_row_slice(n, n, a)).q();
    let mut out = vec![0.0; n * n];
    write_row_major(n, n, |i, j| q[(i, j)], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::test_support::assert_q_factors;
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

    #[test]
    fn nalgebra_q_is_a_q_of_the_input() {
        for n in [1, 6, 50] {
            assert_q_factors(n, q_of);
        }
    }

    #[test]
    fn q_operations_time_or_say_why_not() {
        let shape = Shape::new(2, 6).unwrap();
        let a = generate(
            &Spec {
                batch: 2,
                n: 6,
                cond: 1.0,
                case: Case::Dense,
            },
            1,
        );
        let opts = crate::peers::test_support::one_rep();
        for op in [
            Operation::Orgqr,
            Operation::Ormqr(ApplyQ::QT_LEFT),
            Operation::Qr,
        ] {
            let t = NalgebraPeer.bench_op(op, shape, &[&a], &opts).unwrap();
            assert_eq!(t.reps, 1, "{op}");
        }
        let other = Operation::Ormqr(ApplyQ::ALL[0]);
        assert!(NalgebraPeer.bench_op(other, shape, &[&a], &opts).is_err());
    }
}
