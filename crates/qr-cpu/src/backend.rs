//! [`CpuBackend`]: the batch loop and its split over the rayon pool.

use faer::Par;
use qr_core::{ApplyQ, Backend, BatchMut, BatchRef, Info, QrError, Reflectors, Shape};
use rayon::prelude::*;

use crate::blocked::{Workspace, factor_matrix};
use crate::orgqr::{QWorkspace, orgqr_matrix};
use crate::ormqr::{ormqr_matrix, ormqr_workspace};
use crate::tuning::{QTuning, Tuning};

/// The pure-Rust CPU backend (name `"cpu"`).
///
/// Runs on the global rayon pool. Large batches are spread over the pool one
/// matrix per task, each matrix factored on one thread with scratch kept per
/// worker; small batches are factored one matrix after the other, each with
/// its trailing updates split over the pool.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    tuning: Tuning,
    q_tuning: QTuning,
}

impl CpuBackend {
    /// A backend with the default [`Tuning`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A backend with explicit tuning (tests use it to force every path).
    pub fn with_tuning(tuning: Tuning) -> Self {
        Self {
            tuning,
            q_tuning: QTuning::default(),
        }
    }

    /// The same backend with explicit `orgqr` / `ormqr` block sizes.
    pub fn with_q_tuning(mut self, q_tuning: QTuning) -> Self {
        self.q_tuning = q_tuning;
        self
    }

    /// The tuning in use.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// The `orgqr` / `ormqr` tuning in use.
    pub fn q_tuning(&self) -> &QTuning {
        &self.q_tuning
    }

    /// Batch-parallel (one matrix per task, `Par::Seq` inside) or not (the
    /// matrices in order, the pool inside each), as for `geqrf`.
    fn split(&self, batch: usize, n: usize, cols: usize) -> (bool, Par) {
        let threads = rayon::current_num_threads();
        if self.tuning.batch_parallel(batch, n, cols, threads) {
            (true, Par::Seq)
        } else if threads > 1 {
            (false, Par::rayon(threads))
        } else {
            (false, Par::Seq)
        }
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
        let (batch_parallel, par) = self.split(batch, n, n);
        if batch_parallel {
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

    fn orgqr_into(
        &self,
        f: Reflectors<'_>,
        q: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = f.shape();
        Shape::check_len("q", shape.a_len(), q.len())?;
        Shape::check_len("info", shape.info_len(), info.len())?;
        if shape.is_empty() {
            info.fill(Info::OK);
            return Ok(());
        }
        let n = shape.n();
        let (qt, par_min) = (&self.q_tuning, self.tuning.par_update_min_cols);
        let (batch_parallel, par) = self.split(shape.batch(), n, n);
        per_matrix(
            f,
            (q, n * n),
            info,
            batch_parallel,
            || QWorkspace::for_orgqr(n, qt),
            |ws, h, tau, q| orgqr_matrix(n, h, tau, q, qt, ws, par, par_min),
        )
    }

    fn ormqr_into(
        &self,
        f: Reflectors<'_>,
        op: ApplyQ,
        k: usize,
        c: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = f.shape();
        ApplyQ::check(shape, k, c.len(), info.len())?;
        if shape.is_empty() {
            info.fill(Info::OK);
            return Ok(());
        }
        let n = shape.n();
        if k == 0 {
            // Nothing to compute; the reflectors still get their status.
            f.statuses(info);
            return Ok(());
        }
        let (qt, par_min) = (&self.q_tuning, self.tuning.par_update_min_cols);
        let (batch_parallel, par) = self.split(shape.batch(), n, k);
        per_matrix(
            f,
            (c, n * k),
            info,
            batch_parallel,
            || ormqr_workspace(n, op, k, qt),
            |ws, h, tau, c| ormqr_matrix(n, h, tau, op, k, c, qt, ws, par, par_min),
        )
    }
}

/// Runs `work(workspace, h_b, tau_b, out_b)` for every matrix of `f`, its
/// output the `len` floats of `out` at `b * len` and its status `info[b]`:
/// one matrix per task across the pool with a workspace per worker when
/// `batch_parallel`, else in order with one workspace. A workspace that
/// cannot be allocated is the error.
fn per_matrix<W: Send>(
    f: Reflectors<'_>,
    (out, len): (&mut [f32], usize),
    info: &mut [Info],
    batch_parallel: bool,
    workspace: impl Fn() -> Result<W, QrError> + Send + Sync,
    work: impl Fn(&mut W, &[f32], &[f32], &mut [f32]) -> Info + Send + Sync,
) -> Result<(), QrError> {
    let n = f.shape().n();
    if batch_parallel {
        f.h()
            .par_chunks_exact(n * n)
            .zip(f.tau().par_chunks_exact(n))
            .zip(out.par_chunks_exact_mut(len))
            .zip(info.par_iter_mut())
            .try_for_each_init(&workspace, |ws, (((h, tau), o), info)| {
                let ws = ws.as_mut().map_err(|e| e.clone())?;
                *info = work(ws, h, tau, o);
                Ok(())
            })
    } else {
        let mut ws = workspace()?;
        for (((h, tau), o), info) in f
            .h()
            .chunks_exact(n * n)
            .zip(f.tau().chunks_exact(n))
            .zip(out.chunks_exact_mut(len))
            .zip(info.iter_mut())
        {
            *info = work(&mut ws, h, tau, o);
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
