//! faer's own Householder QR (`qr_in_place`, no pivoting) as a peer.
//!
//! faer factors column-major matrices in place with its recommended block
//! size; its packed factor is LAPACK's `H`, and the diagonal of each block
//! of its coefficient matrix holds `1 / tau`. faer skips a column whose norm
//! is negligible (it reveals rank), after which its factor is no longer
//! `geqrf` form, so the output is only `geqrf` form on full-rank inputs.
//!
//! For the `Q` operations it takes its own block reflectors, not `(H, tau)`:
//! orgqr is timed as `Qr::compute_Q` forms `Q` (the block reflectors applied
//! to the identity) and ormqr as the block reflectors applied to `C`, both
//! from its own factorization computed untimed beforehand; qr is timed
//! whole (factor, then `Q`).

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
    apply_block_householder_sequence_on_the_right_in_place_scratch,
    apply_block_householder_sequence_on_the_right_in_place_with_conj,
    apply_block_householder_sequence_transpose_on_the_left_in_place_scratch,
    apply_block_householder_sequence_transpose_on_the_left_in_place_with_conj,
    apply_block_householder_sequence_transpose_on_the_right_in_place_scratch,
    apply_block_householder_sequence_transpose_on_the_right_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::{
    qr_in_place, qr_in_place_scratch, recommended_block_size,
};
use faer::{Conj, Mat, MatMut, Par};
use qr_core::{
    ApplyQ, Backend, BatchMut, BatchRef, BenchOptions, BenchTiming, Operation, QrError, Shape,
    Side, Transpose,
};
use rayon::prelude::*;

use super::{Spread, for_each_matrix, write_row_major};

/// faer's QR of every matrix, spread over the cores as [`Spread`] says.
#[derive(Clone, Debug)]
pub struct FaerPeer {
    spread: Spread,
    name: String,
}

impl FaerPeer {
    /// The peer in configuration `spread` (named `faer-batch`, `faer-inner`).
    pub fn new(spread: Spread) -> Self {
        Self {
            spread,
            name: format!("faer-{}", spread.suffix()),
        }
    }

    fn par(&self) -> Par {
        match self.spread {
            Spread::Batch => Par::Seq,
            Spread::Inner => Par::rayon(0),
        }
    }

    /// Runs `f(b, out_b)` for every matrix `b` of a batch whose outputs are
    /// the `chunk`-long pieces of `out`, spread as the configuration says.
    fn each(&self, out: &mut [f32], chunk: usize, f: impl Fn(usize, &mut [f32]) + Sync + Send) {
        if chunk == 0 {
            return;
        }
        match self.spread {
            Spread::Batch => out
                .par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(b, o)| f(b, o)),
            Spread::Inner => out.chunks_mut(chunk).enumerate().for_each(|(b, o)| f(b, o)),
        }
    }
}

/// What [`FaerPeer`]'s `bench_op` times.
pub fn times(op: Operation) -> &'static str {
    match op {
        Operation::Geqrf => "geqrf",
        Operation::Orgqr => "Q formed from its own QR's block reflectors (qr_in_place untimed)",
        Operation::Ormqr(_) => "its own QR's block reflectors applied to C (qr_in_place untimed)",
        Operation::Qr => "qr_in_place, then Q formed",
    }
}

impl Backend for FaerPeer {
    fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> String {
        format!(
            "faer qr_in_place, {}, {} rayon threads",
            match self.spread {
                Spread::Batch => "sequential per matrix, rayon across the batch",
                Spread::Inner => "matrices in order, faer's parallelism inside each",
            },
            rayon::current_num_threads()
        )
    }

    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError> {
        let n = a.shape().n();
        let par = self.par();
        for_each_matrix(a, out, self.spread, |a, h, tau| {
            let f = Factor::new(n, a, par);
            write_row_major(n, n, |i, j| f.qr[(i, j)], h);
            for (j, t) in tau.iter_mut().enumerate() {
                // Blocks start at multiples of `block`, so column j's coefficient is
                // on the diagonal of its block; `1 / inf = 0` is an identity reflector.
                *t = f.coeff[(j % f.coeff.nrows(), j)].recip();
            }
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
        if op == Operation::Geqrf {
            return self.bench(shape, inputs, opts);
        }
        let (n, len, par) = (shape.n(), shape.matrix_len(), self.par());
        let count = if len == 0 { 0 } else { shape.batch() };
        if op == Operation::Qr {
            // Q and R of a matrix side by side.
            let mut out = vec![0.0f32; 2 * shape.a_len()];
            return qr_core::time_on_host(opts, inputs.len(), || {
                for a in inputs {
                    self.each(&mut out, 2 * len, |b, out| {
                        let f = Factor::new(n, &a[b * len..(b + 1) * len], par);
                        let q = f.q(par);
                        let (qo, ro) = out.split_at_mut(len);
                        write_row_major(n, n, |i, j| q[(i, j)], qo);
                        write_row_major(n, n, |i, j| if i <= j { f.qr[(i, j)] } else { 0.0 }, ro);
                    });
                }
                Ok(())
            });
        }
        let factors: Vec<Vec<Factor>> = inputs
            .iter()
            .map(|a| {
                (0..count)
                    .into_par_iter()
                    .map(|b| Factor::new(n, &a[b * len..(b + 1) * len], par).with_basis())
                    .collect()
            })
            .collect();
        let mut out = vec![0.0f32; shape.a_len()];
        qr_core::time_on_host(opts, inputs.len(), || {
            for (a, fs) in inputs.iter().zip(&factors) {
                self.each(&mut out, len, |b, out| {
                    let m = match op {
                        Operation::Ormqr(apply) => {
                            let a = &a[b * len..(b + 1) * len];
                            let mut c = Mat::from_fn(n, n, |i, j| a[i * n + j]);
                            fs[b].apply(apply, c.as_mut(), par);
                            c
                        }
                        _ => fs[b].q(par),
                    };
                    write_row_major(n, n, |i, j| m[(i, j)], out);
                });
            }
            Ok(())
        })
    }
}

/// faer's factorization of one matrix: the packed factor (column-major)
/// and its block coefficients.
struct Factor {
    qr: Mat<f32>,
    coeff: Mat<f32>,
}

impl Factor {
    /// `qr_in_place` of the row-major `a`.
    fn new(n: usize, a: &[f32], par: Par) -> Self {
        let block = recommended_block_size::<f32>(n, n);
        let mut qr = Mat::from_fn(n, n, |i, j| a[i * n + j]);
        let mut coeff = Mat::<f32>::zeros(block, n);
        let mut mem = MemBuffer::new(qr_in_place_scratch::<f32>(
            n,
            n,
            block,
            par,
            Default::default(),
        ));
        qr_in_place(
            qr.as_mut(),
            coeff.as_mut(),
            par,
            MemStack::new(&mut mem),
            Default::default(),
        );
        Self { qr, coeff }
    }

    /// The factor turned into the unit lower-triangular basis of the
    /// reflectors, as faer's `Qr` keeps it (`split_LU`).
    fn with_basis(mut self) -> Self {
        let n = self.qr.nrows();
        for j in 0..n {
            for i in 0..=j {
                self.qr[(i, j)] = if i == j { 1.0 } else { 0.0 };
            }
        }
        self
    }

    /// `Q`, as `Qr::compute_Q` forms it: the reflectors applied to `I`.
    /// Reads only the strictly lower part of the factor.
    fn q(&self, par: Par) -> Mat<f32> {
        let n = self.qr.nrows();
        let mut q = Mat::<f32>::identity(n, n);
        self.apply(ApplyQ::ALL[0], q.as_mut(), par);
        q
    }

    /// `c = op(Q) c` or `c op(Q)`.
    fn apply(&self, op: ApplyQ, c: MatMut<'_, f32>, par: Par) {
        let (n, block) = (self.qr.nrows(), self.coeff.nrows());
        let (basis, coeff) = (self.qr.as_ref(), self.coeff.as_ref());
        let other = match op.side {
            Side::Left => c.ncols(),
            Side::Right => c.nrows(),
        };
        let req = match (op.side, op.transpose) {
            (Side::Left, Transpose::No) => {
                apply_block_householder_sequence_on_the_left_in_place_scratch::<f32>(
                    n, block, other,
                )
            }
            (Side::Left, Transpose::Yes) => {
                apply_block_householder_sequence_transpose_on_the_left_in_place_scratch::<f32>(
                    n, block, other,
                )
            }
            (Side::Right, Transpose::No) => {
                apply_block_householder_sequence_on_the_right_in_place_scratch::<f32>(
                    n, block, other,
                )
            }
            (Side::Right, Transpose::Yes) => {
                apply_block_householder_sequence_transpose_on_the_right_in_place_scratch::<f32>(
                    n, block, other,
                )
            }
        };
        let mut mem = MemBuffer::new(req);
        let stack = MemStack::new(&mut mem);
        match (op.side, op.transpose) {
            (Side::Left, Transpose::No) => {
                apply_block_householder_sequence_on_the_left_in_place_with_conj(
                    basis,
                    coeff,
                    Conj::No,
                    c,
                    par,
                    stack,
                )
            }
            (Side::Left, Transpose::Yes) => {
                apply_block_householder_sequence_transpose_on_the_left_in_place_with_conj(
                    basis,
                    coeff,
                    Conj::No,
                    c,
                    par,
                    stack,
                )
            }
            (Side::Right, Transpose::No) => {
                apply_block_householder_sequence_on_the_right_in_place_with_conj(
                    basis,
                    coeff,
                    Conj::No,
                    c,
                    par,
                    stack,
                )
            }
            (Side::Right, Transpose::Yes) => {
                apply_block_householder_sequence_transpose_on_the_right_in_place_with_conj(
                    basis,
                    coeff,
                    Conj::No,
                    c,
                    par,
                    stack,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::test_support::{assert_peer_meets_bar, assert_q_factors, one_rep};
    use qr_verify::{Case, Spec, generate};

    #[test]
    fn faer_output_is_geqrf_form_on_full_rank_inputs() {
        // Sizes around faer's block-size steps (1, 4, 8, 32, 48).
        for n in [1, 3, 16, 17, 33, 64, 130, 200] {
            assert_peer_meets_bar(&FaerPeer::new(Spread::Batch), n);
            assert_peer_meets_bar(&FaerPeer::new(Spread::Inner), n);
        }
    }

    #[test]
    fn faer_q_is_a_q_of_the_input_and_its_products_agree() {
        for n in [1, 4, 17, 70] {
            assert_q_factors(n, |n, a| {
                let q = Factor::new(n, a, Par::Seq).with_basis().q(Par::Seq);
                let mut out = vec![0.0; n * n];
                write_row_major(n, n, |i, j| q[(i, j)], &mut out);
                out
            });
            // Each product of its Q with C = I is Q or Q^T.
            let a = generate(
                &Spec {
                    batch: 1,
                    n,
                    cond: 1.0,
                    case: Case::Dense,
                },
                2,
            );
            let f = Factor::new(n, &a, Par::Seq).with_basis();
            let q = f.q(Par::Seq);
            for op in ApplyQ::ALL {
                let mut c = Mat::<f32>::identity(n, n);
                f.apply(op, c.as_mut(), Par::Seq);
                for i in 0..n {
                    for j in 0..n {
                        let want = match op.transpose {
                            Transpose::No => q[(i, j)],
                            Transpose::Yes => q[(j, i)],
                        };
                        assert!((c[(i, j)] - want).abs() < 1e-5, "{op} n={n} ({i}, {j})");
                    }
                }
            }
        }
    }

    #[test]
    fn every_q_operation_times() {
        let shape = Shape::new(3, 9).unwrap();
        let a = generate(
            &Spec {
                batch: 3,
                n: 9,
                cond: 1.0,
                case: Case::Dense,
            },
            1,
        );
        for spread in [Spread::Batch, Spread::Inner] {
            let peer = FaerPeer::new(spread);
            for op in [
                Operation::Orgqr,
                Operation::Ormqr(ApplyQ::ALL[3]),
                Operation::Qr,
            ] {
                let t = peer.bench_op(op, shape, &[&a, &a], &one_rep()).unwrap();
                assert_eq!(t.reps, 1, "{op}");
            }
        }
    }
}
