//! The compact-WY driver of the `blocked`, `cluster` and `large` strategies:
//! for each 32-column panel, the panel kernel factors it (and forms V and T),
//! then `Q_p^T = I - V T^T V^T` is applied to the trailing matrix,
//! `A_t -= V (T^T (V^T A_t))`, by the fused tensor-core kernel (tf32 3-pass,
//! float32 accuracy) or by three cuBLAS SGEMMs in full float32.

use std::ffi::c_int;

use cudarc::cublas::sys::cublasOperation_t as Op;
use cudarc::driver::{CudaFunction, CudaStream};
use qr_core::{QrError, Shape};

use crate::error::blas;
use crate::factor::Operands;
use crate::factor::engine::{Engine, Lane};
use crate::kernels::panel::reg as panelreg;
use crate::kernels::panel::{self, Meeting, NB, PanelBuffers};
use crate::kernels::trailing_tc;
use crate::kernels::util;
use crate::plan::{Blocked, Panel, TensorUpdate, Update};

/// Most matrices per launch: the grid's y dimension and cuBLAS's batch count.
const MAX_MATS_PER_LAUNCH: usize = 65_535;

/// Factors the input `ops.a` into `ops.h` and `ops.tau` (`a` is only
/// read), after (or beside the first step of) the scan that sets `info` to 1 for non-finite
/// matrices and finds each matrix's exactly-zero trailing columns (skipped
/// by the kernels). Returns the checks left (`Checks`), the queued ones
/// ordered before the main stream's next work. With the
/// tensor-core update the first panel's two kernels (either panel kernel)
/// read `a` and write `h`, so the input is copied on the way instead of by
/// a separate pass over the whole batch; otherwise `a` is copied into `h`
/// first and everything runs in place. Everything is queued on `lane`'s
/// streams with its scratch.
pub(crate) fn factor(
    engine: &Engine,
    lane: &Lane,
    plan: &Blocked,
    shape: Shape,
    ops: Operands,
) -> Result<Checks, QrError> {
    let Operands { a, h, tau, info } = ops;
    let (batch, n) = (shape.batch(), shape.n());
    let groups = plan.meeting.groups();
    let threads = plan.panel.threads();
    let meeting = plan.meeting.kernel();
    let global = meeting == Meeting::Global;
    let stream = lane.stream();
    let launch = engine.launch();
    let mut ws = lane.workspace();
    // The zero-column bounds, then (fused checks) the writers' overflow
    // marks: one buffer, zeroed at once.
    let fused = plan.schedule.fused_checks;
    let zcol = ws
        .zcol
        .ensure(stream, if fused { 2 * batch } else { batch })?;
    let oflow = if fused { zcol + (batch * 4) as u64 } else { 0 };
    util::zero_nonfinite_zcol(launch, stream, shape, info, zcol, fused)?;
    let tensor = match plan.update {
        Update::Tensor(t) => Some(t),
        Update::Sgemm => None,
    };
    let out_of_place = tensor.is_some();
    // Out of place, the first panel and the first update read the input,
    // not zcol, so the scan may run beside them on the auxiliary stream
    // (`Tuning::checks_aside_min_l2`); every later step waits for it. There too,
    // once the step ending at column `split` is queued, the overflow check
    // of the rows and columns before it (final from then on).
    let checks_aside = plan.schedule.checks_aside;
    let split = if checks_aside && n > 2 * NB && !fused {
        (n / 2).next_multiple_of(NB)
    } else {
        0
    };
    if checks_aside {
        lane.aux_waits_main()?;
        util::scan(launch, lane.aux_stream(), shape, a, info, zcol)?;
    } else {
        util::scan(launch, stream, shape, a, info, zcol)?;
    }
    if !out_of_place {
        launch.copy_dtod(stream, h, a, shape.a_bytes())?;
    }
    let mut buf = PanelBuffers {
        h,
        src: if out_of_place { a } else { h },
        zcol,
        v: ws.v.ensure(stream, batch * n * NB)?,
        t: ws.t.ensure(stream, batch * NB * NB)?,
        tau,
        partials: if global {
            ws.partials
                .ensure(stream, batch * 2 * groups as usize * NB)?
        } else {
            0
        },
        rowbuf: if global {
            ws.rowbuf.ensure(stream, batch * 2 * NB)?
        } else {
            0
        },
        counters: if global {
            ws.counters.ensure(stream, 2 * batch)?
        } else {
            0
        },
        oflow,
    };
    let (wbuf, w2buf) = if out_of_place {
        (0, 0)
    } else {
        (
            ws.w.ensure(stream, batch * NB * n)?,
            ws.w2.ensure(stream, batch * NB * n)?,
        )
    };

    let max_rows = n.div_ceil(groups as usize);
    // The register panel needs no shared-memory kernel at all.
    let kernel = match plan.panel {
        Panel::Registers {
            min_threads,
            rows_per_thread,
            halves,
            ..
        } => PanelKernel::Registers {
            min_threads,
            rows_per_thread,
            halves,
        },
        Panel::Shared {
            pipelined, fold, ..
        } => {
            let variant = panel::Variant { pipelined, fold };
            let f = panel::function(launch, threads, meeting, variant, max_rows)?;
            PanelKernel::Shared(f, variant)
        }
    };
    let mut per_launch = MAX_MATS_PER_LAUNCH;
    if let (true, PanelKernel::Shared(f, _)) = (global, &kernel) {
        launch.memset_u32(stream, buf.counters, 0, 2 * batch)?;
        // The blocks of one matrix wait for each other, so all of a launch's
        // blocks must be resident at once.
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(
                threads,
                max_rows * meeting.row_bytes(),
                None,
            )
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

    // Look-ahead (`Schedule::ahead`): the panels and the update of each
    // next panel's own columns run on the engine's priority stream, the
    // rest of each update on the main stream, so that panel k + 1 (latency
    // bound) overlaps the bulk of update k. Panels alternate between two
    // V / T buffers: update k still reads its V and T while panel k + 1
    // writes the next. Every element sees the same operations in the same
    // order either way, so the bits do not change.
    let ahead = plan.schedule.ahead;
    let vt = if ahead {
        Some((
            ws.v2.ensure(stream, batch * n * NB)?,
            ws.t2.ensure(stream, batch * NB * NB)?,
        ))
    } else {
        None
    };
    let side = lane.side_stream();
    if ahead {
        lane.side_waits_main()?;
    }
    let panel_stream = if ahead { side } else { stream };
    let (v1, t1) = (buf.v, buf.t);
    // Fold (`Panel::Shared`'s `fold`): each panel but the first applies the previous
    // panel's reflectors to its own columns itself, instead of a tensor-core
    // launch of that update between the two panels; the bulk update leaves
    // those columns out. The first fold reads them where the first update
    // would have: the input, out of place.
    let fold = plan.panel.folds();
    let first_src = buf.src;
    // The check of the rows and columns final at mid-factorization, once
    // the step that finishes them is queued.
    let mid_check = || -> Result<(), QrError> {
        lane.aux_waits_main()?;
        if ahead {
            lane.aux_waits_side()?;
        }
        let aux = lane.aux_stream();
        let out = (h, tau, info);
        let top = util::Region {
            rows: (0, split),
            cols: (0, n),
            taus: (0, split),
        };
        util::overflow_in(launch, aux, shape, out, top)?;
        let left = util::Region {
            rows: (split, n),
            cols: (0, split),
            taus: (0, 0),
        };
        util::overflow_in(launch, aux, shape, out, left)
    };
    for (k, p) in (0..n).step_by(NB).enumerate() {
        let w = NB.min(n - p);
        if checks_aside && k == 1 {
            if ahead {
                lane.side_waits_aux()?;
            }
            lane.main_waits_aux()?;
        }
        // The previous panel's V and T, for the fold.
        let prev = (fold && k > 0).then_some((buf.v, buf.t));
        if let Some((v2, t2)) = vt {
            (buf.v, buf.t) = if k % 2 == 0 { (v1, t1) } else { (v2, t2) };
        }
        // The first fold reads its columns where the first update would have.
        let pbuf = if prev.is_some() && k == 1 {
            PanelBuffers {
                src: first_src,
                ..buf
            }
        } else {
            buf
        };
        for mat0 in (0..batch).step_by(per_launch) {
            let mats = per_launch.min(batch - mat0);
            match &kernel {
                PanelKernel::Shared(f, variant) => panel::launch(
                    panel_stream,
                    f,
                    threads,
                    meeting,
                    *variant,
                    groups,
                    n,
                    p,
                    w,
                    mat0,
                    mats,
                    &pbuf,
                    prev,
                )?,
                PanelKernel::Registers {
                    min_threads,
                    rows_per_thread,
                    halves,
                } => panelreg::launch(
                    launch,
                    panel_stream,
                    threads,
                    *min_threads,
                    *rows_per_thread,
                    meeting.cluster_size(),
                    n,
                    p,
                    w,
                    mat0,
                    mats,
                    &pbuf,
                    *halves,
                )?,
            }
        }
        if fold && p == split && p > 0 {
            // Folded, the rows above this panel are final only once it has
            // applied the previous panel's reflectors to its columns.
            mid_check()?;
        }
        if p + w < n {
            let next = NB.min(n - p - w);
            if let Some(t) = tensor.filter(|_| fold || ahead) {
                // The bulk leaves the next panel's columns out. Ahead, it
                // waits for this panel only, and the next panel's columns
                // (its update, or with the fold the next panel itself) wait
                // for the previous bulk, which covered them too.
                if ahead {
                    lane.main_waits_side()?;
                    lane.side_waits_main()?;
                }
                if !fold {
                    tensor_update(engine, side, (shape, &t), p, w, (p + w, next), &buf)?;
                }
                tensor_update(
                    engine,
                    stream,
                    (shape, &t),
                    p,
                    w,
                    (p + w + next, n - p - w - next),
                    &buf,
                )?;
            } else if let Some(t) = tensor {
                tensor_update(engine, stream, (shape, &t), p, w, (p + w, n - p - w), &buf)?;
            } else {
                trailing_update(engine, shape, p, w, &buf, wbuf, w2buf)?;
            }
        }
        // From here on h holds every column (the first panel wrote its own,
        // the first update the rest).
        buf.src = h;
        if !fold && p + w == split {
            mid_check()?;
        }
    }
    if ahead {
        lane.main_waits_side()?;
    }
    if checks_aside {
        // The overflow check after the last step reads info, and the fill
        // follows the early check.
        lane.main_waits_aux()?;
    }
    Ok(Checks { split, oflow })
}

/// The panel kernel of one factorization: the shared-memory kernel,
/// compiled, with its variant, or the register panel's parameters (its
/// launcher picks each panel's block).
enum PanelKernel {
    Shared(CudaFunction, panel::Variant),
    Registers {
        min_threads: u32,
        rows_per_thread: u32,
        halves: bool,
    },
}

/// What a factorization leaves the caller to check.
pub(crate) struct Checks {
    /// The overflow check of every entry of H in a row or column before
    /// `split` (and of tau before it) is queued already.
    pub split: usize,
    /// With `Schedule::fused_checks`, the writers' overflow marks (batch
    /// ints), which the NaN fill turns into info; every value of H and tau
    /// is checked as it is written, so no separate check is left. Else 0.
    pub oflow: u64,
}

/// `A_t -= V (T^T (V^T A_t))` on the tensor cores, on `stream`: rows
/// `p..n`, the `ntrail` columns from `c0`, with the `w` reflectors of the
/// panel at column `p` (V and T of `buf`).
#[allow(clippy::too_many_arguments)]
fn tensor_update(
    engine: &Engine,
    stream: &CudaStream,
    (shape, plan): (Shape, &TensorUpdate),
    p: usize,
    w: usize,
    (c0, ntrail): (usize, usize),
    buf: &PanelBuffers,
) -> Result<(), QrError> {
    let warps = plan.warps;
    let n = shape.n();
    let nrow = n - p;
    if ntrail == 0 {
        return Ok(());
    }
    // The grid is one-dimensional: keep blocks per launch far inside u32.
    let tiles = ntrail.div_ceil(32).max(1);
    let per_launch = (i32::MAX as usize / tiles).clamp(1, MAX_MATS_PER_LAUNCH);
    for mat0 in (0..shape.batch()).step_by(per_launch) {
        let mats = per_launch.min(shape.batch() - mat0);
        let row_split = trailing_tc::row_split(
            tiles.saturating_mul(mats),
            nrow,
            engine.info().sm_count,
            plan.row_split,
            plan.row_split_min_rows,
        );
        let op = trailing_tc::Operands {
            a: buf.h + ((mat0 * n * n + p * n + c0) * 4) as u64,
            src: buf.src + ((mat0 * n * n + p * n + c0) * 4) as u64,
            a_stride: n * n,
            lda: n,
            v: buf.v + (mat0 * n * NB * 4) as u64,
            v_stride: n * NB,
            t: buf.t + (mat0 * NB * NB * 4) as u64,
            t_stride: NB * NB,
            zcol: buf.zcol + (mat0 * 4) as u64,
            panel_col: p,
            trail_col: c0,
            oflow: if buf.oflow == 0 {
                0
            } else {
                buf.oflow + (mat0 * 4) as u64
            },
        };
        trailing_tc::launch(
            engine.launch(),
            stream,
            &op,
            (nrow, ntrail, w),
            mats,
            warps,
            trailing_tc::Staging {
                depth: plan.stage_depth,
                l2_hints: plan.l2_hints,
            },
            row_split,
        )?;
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
