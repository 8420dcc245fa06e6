//! The compact-WY driver of the `blocked` and `large` strategies: for each
//! 32-column panel, the panel kernel factors it (and forms V and T), then
//! three cuBLAS products apply `Q_p^T = I - V T^T V^T` to the trailing matrix:
//! `A_t -= V (T^T (V^T A_t))`, in full float32.

use std::ffi::c_int;

use cudarc::cublas::sys::cublasOperation_t as Op;
use qr_core::{QrError, Shape};

use crate::engine::Engine;
use crate::error::blas;
use crate::kernels::panel::{self, NB, PanelBuffers, ROW_BYTES};
use crate::plan::Plan;

/// Most matrices per launch: the grid's y dimension and cuBLAS's batch count.
const MAX_MATS_PER_LAUNCH: usize = 65_535;

/// Factors `h` in place (it already holds the input) and writes `tau`.
pub(crate) fn factor(
    engine: &Engine,
    plan: &Plan,
    shape: Shape,
    h: u64,
    tau: u64,
) -> Result<(), QrError> {
    let (batch, n) = (shape.batch(), shape.n());
    let groups = plan.panel.groups.max(1);
    let threads = plan.panel.threads;
    let stream = engine.stream();
    let mut ws = engine.workspace();
    let buf = PanelBuffers {
        h,
        v: ws.v.ensure(stream, batch * n * NB)?,
        t: ws.t.ensure(stream, batch * NB * NB)?,
        tau,
        partials: if groups > 1 {
            ws.partials
                .ensure(stream, batch * 2 * groups as usize * NB)?
        } else {
            0
        },
        rowbuf: if groups > 1 {
            ws.rowbuf.ensure(stream, batch * 2 * NB)?
        } else {
            0
        },
        counters: if groups > 1 {
            ws.counters.ensure(stream, batch)?
        } else {
            0
        },
    };
    let wbuf = ws.w.ensure(stream, batch * NB * n)?;
    let w2buf = ws.w2.ensure(stream, batch * NB * n)?;

    let max_rows = n.div_ceil(groups as usize);
    let f = panel::function(engine, threads, max_rows)?;
    let mut per_launch = MAX_MATS_PER_LAUNCH;
    if groups > 1 {
        engine.memset_u32(buf.counters, 0, batch)?;
        // The blocks of one matrix wait for each other, so all of a launch's
        // blocks must be resident at once.
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(threads, max_rows * ROW_BYTES, None)
            .map_err(|e| {
                QrError::from(crate::error::GpuError::Driver {
                    context: "panel kernel occupancy".into(),
                    error: e,
                })
            })? as usize;
        let resident = per_sm * engine.info().sm_count as usize;
        per_launch = per_launch.min(resident / groups as usize);
        if per_launch == 0 {
            return Err(QrError::Unsupported {
                message: format!(
                    "{groups} panel blocks per matrix cannot be resident at once on {}",
                    engine.info().name
                ),
            });
        }
    }

    for p in (0..n).step_by(NB) {
        let w = NB.min(n - p);
        for mat0 in (0..batch).step_by(per_launch) {
            let mats = per_launch.min(batch - mat0);
            panel::launch(engine, &f, threads, groups, n, p, w, mat0, mats, &buf)?;
        }
        if p + w < n {
            trailing_update(engine, shape, p, w, &buf, wbuf, w2buf)?;
        }
    }
    Ok(())
}

/// `A_t -= V (T^T (V^T A_t))` for the trailing matrix right of panel `p`.
fn trailing_update(
    engine: &Engine,
    shape: Shape,
    p: usize,
    w: usize,
    buf: &PanelBuffers,
    wbuf: u64,
    w2buf: u64,
) -> Result<(), QrError> {
    let n = shape.n();
    let (nrow, c0) = (n - p, p + w);
    let nt = n - c0;
    let at = buf.h + ((p * n + c0) * 4) as u64;
    let (sa, sv, sw, st) = (n * n, n * NB, NB * n, NB * NB);
    for mat0 in (0..shape.batch()).step_by(MAX_MATS_PER_LAUNCH) {
        let mats = MAX_MATS_PER_LAUNCH.min(shape.batch() - mat0);
        let off = |base: u64, stride: usize| base + (mat0 * stride * 4) as u64;
        // Row-major X (r x c, ld) is column-major X^T, so each product is
        // written for cuBLAS as its transpose: C^T = op(B)^T op(A)^T.
        // W = V^T A_t (w x nt):   W^T = A_t^T V
        gemm(
            engine,
            (Op::CUBLAS_OP_N, Op::CUBLAS_OP_T),
            (nt, w, nrow),
            1.0,
            (off(at, sa), n, sa),
            (off(buf.v, sv), NB, sv),
            0.0,
            (off(wbuf, sw), n, sw),
            mats,
        )?;
        // W2 = T^T W (w x nt):    W2^T = W^T T
        gemm(
            engine,
            (Op::CUBLAS_OP_N, Op::CUBLAS_OP_T),
            (nt, w, w),
            1.0,
            (off(wbuf, sw), n, sw),
            (off(buf.t, st), NB, st),
            0.0,
            (off(w2buf, sw), n, sw),
            mats,
        )?;
        // A_t -= V W2 (nrow x nt): A_t^T -= W2^T V^T
        gemm(
            engine,
            (Op::CUBLAS_OP_N, Op::CUBLAS_OP_N),
            (nt, nrow, w),
            -1.0,
            (off(w2buf, sw), n, sw),
            (off(buf.v, sv), NB, sv),
            1.0,
            (off(at, sa), n, sa),
            mats,
        )?;
    }
    Ok(())
}

/// One column-major strided-batched SGEMM, `C = alpha op(A) op(B) + beta C`;
/// each operand is `(pointer, leading dimension, stride)` in elements.
#[allow(clippy::too_many_arguments)]
fn gemm(
    engine: &Engine,
    (ta, tb): (Op, Op),
    (m, n, k): (usize, usize, usize),
    alpha: f32,
    a: (u64, usize, usize),
    b: (u64, usize, usize),
    beta: f32,
    c: (u64, usize, usize),
    batch: usize,
) -> Result<(), QrError> {
    let int = |x: usize| -> Result<c_int, QrError> {
        c_int::try_from(x).map_err(|_| QrError::Unsupported {
            message: format!("a matrix dimension of {x} exceeds cuBLAS's int"),
        })
    };
    // SAFETY: the operands are device buffers sized for `batch` matrices at
    // their strides (the workspace and the caller's H), the dimensions stay
    // within them, and alpha/beta are host scalars as the handle's default
    // pointer mode expects. The handle is bound to the engine's stream.
    let r = unsafe {
        cudarc::cublas::result::sgemm_strided_batched(
            engine.blas_handle(),
            ta,
            tb,
            int(m)?,
            int(n)?,
            int(k)?,
            &alpha,
            a.0 as *const f32,
            int(a.1)?,
            a.2 as i64,
            b.0 as *const f32,
            int(b.1)?,
            b.2 as i64,
            &beta,
            c.0 as *mut f32,
            int(c.1)?,
            c.2 as i64,
            int(batch)?,
        )
    };
    Ok(blas(r, "cublasSgemmStridedBatched")?)
}
