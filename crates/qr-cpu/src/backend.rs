//! [`CpuBackend`]: the batch loop and its split over the rayon pool.

use faer::Par;
use qr_core::{Backend, BatchMut, BatchRef, Info, QrError, Shape};
use rayon::prelude::*;

use crate::blocked::{Workspace, factor_matrix};
use crate::tuning::Tuning;

/// The pure-Rust CPU backend (name `"cpu"`).
///
/// Runs on the global rayon pool. Large batches are spread over the pool one
/// matrix per task, each matrix factored on one thread with scratch kept per
/// worker; small batches are factored one matrix after the other, each with
/// its trailing updates split over the pool.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    tuning: Tuning,
}

impl CpuBackend {
    /// A backend with the default [`Tuning`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A backend with explicit tuning (tests use it to force every path).
    pub fn with_tuning(tuning: Tuning) -> Self {
        Self { tuning }
    }

    /// The tuning in use.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn describe(&self) -> String {
        let t = &self.tuning;
        format!(
            "cpu: {} rayon threads, {} vector loops, unblocked for n <= {}, panels of {} \
             columns ({} from n = {}), recursive below {}",
            rayon::current_num_threads(),
            crate::isa::detected(),
            t.small_n,
            t.block_for(0),
            t.block_for(usize::MAX),
            t.wide_block_min_n,
            t.panel_leaf
        )
    }

    fn geqrf_into(&self, a: BatchRef<'_>, mut out: BatchMut<'_>) -> Result<(), QrError> {
        let shape = a.shape();
        check_same_shape(shape, out.shape())?;
        let (n, batch) = (shape.n(), shape.batch());
        let (h, tau, info) = out.parts();
        if shape.is_empty() {
            info.fill(Info::OK);
            return Ok(());
        }
        let tuning = &self.tuning;
        let threads = rayon::current_num_threads();
        if batch >= tuning.batch_parallel_min.max(2) && threads > 1 {
            a.as_slice()
                .par_chunks_exact(n * n)
                .zip(h.par_chunks_exact_mut(n * n))
                .zip(tau.par_chunks_exact_mut(n))
                .zip(info.par_iter_mut())
                .for_each_init(
                    || Workspace::new(n, tuning),
                    |ws, (((a, h), tau), info)| {
                        *info = factor_matrix(n, a, h, tau, tuning, ws, Par::Seq);
                    },
                );
        } else {
            let par = if threads > 1 {
                Par::rayon(threads)
            } else {
                Par::Seq
            };
            let mut ws = Workspace::new(n, tuning);
            for (((a, h), tau), info) in a
                .as_slice()
                .chunks_exact(n * n)
                .zip(h.chunks_exact_mut(n * n))
                .zip(tau.chunks_exact_mut(n))
                .zip(info.iter_mut())
            {
                *info = factor_matrix(n, a, h, tau, tuning, &mut ws, par);
            }
        }
        Ok(())
    }
}

/// The input and output views must describe the same batch; report the
/// first buffer whose length then disagrees.
fn check_same_shape(input: Shape, output: Shape) -> Result<(), QrError> {
    Shape::check_len("h", input.a_len(), output.a_len())?;
    Shape::check_len("tau", input.tau_len(), output.tau_len())?;
    Shape::check_len("info", input.info_len(), output.info_len())
}
