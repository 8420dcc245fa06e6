//! `orgqr` and `ormqr` on the device, queued on the engine's stream: every
//! 32-column block's V and T formed at once from `(H, tau)` (kernels/trailing_tc/q),
//! then the blocks applied, then the result checks.
//!
//! Two ways to apply the blocks ([`OnChip`]):
//! - on chip (`q_apply_f32`), where a 32-column tile of all `n` rows fits
//!   the shared memory of one block or of a cluster of up to
//!   `Tuning::q_max_cluster` blocks, and for `ormqr` up to
//!   `Tuning::q_ormqr_on_chip_max_n`: each tile of the result takes every
//!   block in turn and crosses global memory once each way;
//! - otherwise one tensor-core update per block over the whole result
//!   (trailing_tc, the geqrf plan's update settings), which streams it
//!   through global memory twice per block.
//!
//! `orgqr` accumulates backwards, as LAPACK's `sorgqr`: `Q = Q_0 (Q_1 (...
//! (Q_{K-1} I)))`; block `k` changes only `Q[p.., p..]`, so tile `j` of Q
//! takes `Q_j` to `Q_0` only, and the per-block update touches only
//! `Q[p.., p + 32..]` (its first `w` columns are the identity's under
//! `Q_k`, formed by the prepare kernel): about `4/3 n^3` either way.
//! `ormqr` from the left runs the blocks forward for `Q^T C` and backward
//! for `Q C`; from the right it works on `C^T` (`C op(Q) = (op(Q)^T
//! C^T)^T`).

use cudarc::driver::CudaStream;
use qr_core::{ApplyQ, QrError, Shape, Side, Transpose};

use crate::device::probe::DeviceInfo;
use crate::factor::engine::Engine;
use crate::kernels::trailing_tc;
use crate::kernels::trailing_tc::q::{self, Apply, NB, Prepare};
use crate::plan::{TensorUpdate, Update};
use crate::tuning::Tuning;

/// Most floats of V the workspace holds at once: batches whose every
/// block's V would take more run in groups of matrices.
const MAX_V_FLOATS: usize = 1 << 28;

/// Device pointers of one Q operation: the reflectors, the result (`Q`, or
/// `C` updated in place) and `info`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QOperands {
    /// H (`batch * n * n`).
    pub h: u64,
    /// tau (`batch * n`).
    pub tau: u64,
    /// Q (orgqr, `batch * n * n`) or C (ormqr, `batch * n * k`).
    pub out: u64,
    /// One code per matrix, or 0 to leave the codes unwritten (`qr`, whose
    /// codes are geqrf's).
    pub info: u64,
}

/// How the blocks are applied: on chip, each 32-column tile of the result
/// in the shared memory of a cluster of `Some(blocks)` blocks (1: one
/// block, the fewest it fits), or one update per block over the whole
/// result (`None`) where the tile does not fit even over 8 blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OnChip(pub Option<u32>);

impl OnChip {
    /// The choice for order `n` on `device` (clusters from sm_90 on) under
    /// `tuning`: clusters of at most `Tuning::q_max_cluster` blocks (0:
    /// never on chip), and for `ormqr` only up to
    /// `Tuning::q_ormqr_on_chip_max_n`.
    pub(crate) fn choose(n: usize, device: &DeviceInfo, tuning: &Tuning, ormqr: bool) -> Self {
        if ormqr && n > tuning.q_ormqr_on_chip_max_n {
            return Self(None);
        }
        let most = if crate::plan::has_clusters(device) {
            tuning.q_max_cluster
        } else {
            tuning.q_max_cluster.min(1)
        };
        Self(q::apply_cluster(n, device.smem_per_block_optin, most))
    }
}

/// Which operation [`run`] queues.
#[derive(Clone, Copy, Debug)]
pub(crate) enum QOp {
    /// Form Q.
    Orgqr,
    /// Apply `op(Q)` to `C` with `k` columns (left) or rows (right).
    Ormqr(ApplyQ, usize),
}

/// Queues `op` for the batch of `shape` at `ops`, the blocks applied as
/// `on_chip` says, per block with the tensor-core update as `update` (the
/// geqrf plan's) says.
pub(crate) fn run(
    engine: &Engine,
    (on_chip, update): (OnChip, &Update),
    shape: Shape,
    op: QOp,
    ops: QOperands,
) -> Result<(), QrError> {
    let (batch, n) = (shape.batch(), shape.n());
    if batch == 0 {
        return Ok(());
    }
    let stream = engine.stream();
    let launch = engine.launch();
    let k = match op {
        QOp::Orgqr => n,
        QOp::Ormqr(_, k) => k,
    };
    if n == 0 || k == 0 {
        if ops.info != 0 {
            launch.memset_u32(stream, ops.info, 0, batch)?;
        }
        return Ok(());
    }
    let Update::Tensor(update) = update else {
        return Err(QrError::Unsupported {
            message: format!(
                "forming or applying Q needs the tensor-core update (sm_80 or newer); {} is sm_{}{}",
                engine.info().name,
                engine.info().compute_capability.0,
                engine.info().compute_capability.1
            ),
        });
    };
    let on_chip = on_chip.0;
    let per = (MAX_V_FLOATS / q::v_floats(n).max(1)).clamp(1, batch);
    let out_len = n * k;
    let mut ws = engine.workspace();
    for mat0 in (0..batch).step_by(per) {
        let mats = per.min(batch - mat0);
        let v = ws.qv.ensure(stream, mats * q::v_floats(n))?;
        let t = ws.qt.ensure(stream, mats * q::blocks(n) * NB * NB)?;
        // An int per matrix each: bad reflectors, a non-finite C (ormqr's
        // input) and result (zeroed together), the update's zero-column
        // bounds.
        let flags = ws.qflags.ensure(stream, 4 * mats)?;
        let word = |i: u64| flags + 4 * i * mats as u64;
        let (bad, cbad, obad, zcol) = (word(0), word(1), word(2), word(3));
        launch.memset_u32(stream, bad, 0, 3 * mats)?;
        if on_chip.is_none() {
            // No column is known to be zero: the update skips nothing.
            launch.memset_u32(stream, zcol, i32::MAX as u32, mats)?;
        }
        let at = |base: u64, per_matrix: usize| base + (mat0 * per_matrix * 4) as u64;
        let (h, tau, out, info) = (
            at(ops.h, n * n),
            at(ops.tau, n),
            at(ops.out, out_len),
            if ops.info == 0 { 0 } else { at(ops.info, 1) },
        );
        let blocks = Blocks {
            v,
            t,
            zcol,
            n,
            mats,
        };
        // The prepare kernel's operands, with Q where it forms the blocks'
        // own columns (orgqr per block) or 0.
        let prep = |q| Prepare {
            h,
            tau,
            v,
            t,
            q,
            bad,
        };
        match op {
            QOp::Orgqr if let Some(cluster) = on_chip => {
                q::prepare(launch, stream, prep(0), n, mats, false)?;
                let (q_out, dims) = ((out, (n * n, n, n)), (n, mats, cluster));
                q::apply(launch, stream, (v, t), q_out, dims, Apply::Form)?;
                q::finish(launch, stream, (out, out_len), (bad, 0, obad, info), mats)?;
            }
            QOp::Orgqr => {
                q::prepare(launch, stream, prep(out), n, mats, true)?;
                for kb in (0..q::blocks(n)).rev() {
                    let p = kb * NB;
                    if n > p + NB {
                        let a2 = out + ((p * n + p + NB) * 4) as u64;
                        let dims = (n * n, n, n - p - NB);
                        blocks.update(engine, stream, update, kb, (a2, dims))?;
                    }
                }
                q::finish(launch, stream, (out, out_len), (bad, 0, obad, info), mats)?;
            }
            QOp::Ormqr(apply, k) => {
                q::scan(launch, stream, (out, out_len), cbad, mats)?;
                // From the right, op(Q) applies to C^T from the left, with
                // the transpose flipped.
                let (c, transpose) = match apply.side {
                    Side::Left => (out, apply.transpose),
                    Side::Right => {
                        let ct = ws.qc.ensure(stream, mats * out_len)?;
                        q::transpose(launch, stream, (out, ct), (k, n), mats)?;
                        let flipped = match apply.transpose {
                            Transpose::No => Transpose::Yes,
                            Transpose::Yes => Transpose::No,
                        };
                        (ct, flipped)
                    }
                };
                // Q^T C = Q_{K-1}^T ... Q_0^T C: blocks forward, the update
                // as it is; Q C = Q_0 ... Q_{K-1} C: backward, with Q_k
                // (on chip T for T^T; per block the reflectors reversed).
                let reverse = transpose == Transpose::No;
                let reversed = reverse && on_chip.is_none();
                q::prepare(launch, stream, prep(0), n, mats, reversed)?;
                if let Some(cluster) = on_chip {
                    let mode = if reverse { Apply::Q } else { Apply::Qt };
                    let c_out = (c, (n * k, k, k));
                    q::apply(launch, stream, (v, t), c_out, (n, mats, cluster), mode)?;
                } else {
                    let order: Vec<usize> = if reverse {
                        (0..q::blocks(n)).rev().collect()
                    } else {
                        (0..q::blocks(n)).collect()
                    };
                    for kb in order {
                        let a2 = c + ((kb * NB * k) * 4) as u64;
                        blocks.update(engine, stream, update, kb, (a2, (n * k, k, k)))?;
                    }
                }
                if apply.side == Side::Right {
                    q::transpose(launch, stream, (c, out), (n, k), mats)?;
                }
                q::finish(
                    launch,
                    stream,
                    (out, out_len),
                    (bad, cbad, obad, info),
                    mats,
                )?;
            }
        }
    }
    Ok(())
}

/// The prepared blocks of one group of matrices.
struct Blocks {
    v: u64,
    t: u64,
    zcol: u64,
    n: usize,
    mats: usize,
}

impl Blocks {
    /// `A2 -= V_k (S^T (V_k^T A2))` for block `kb` over `A2` (at `a2`,
    /// `n - 32 kb` rows; `dims` = elements between matrices, leading
    /// dimension, columns).
    fn update(
        &self,
        engine: &Engine,
        stream: &CudaStream,
        plan: &TensorUpdate,
        kb: usize,
        (a2, (stride, lda, ntrail)): (u64, (usize, usize, usize)),
    ) -> Result<(), QrError> {
        let (n, p) = (self.n, kb * NB);
        let (nrow, w) = (n - p, NB.min(n - p));
        let tiles = ntrail.div_ceil(32);
        let row_split = trailing_tc::row_split(
            tiles.saturating_mul(self.mats),
            nrow,
            engine.info().sm_count,
            plan.row_split,
            plan.row_split_min_rows,
        );
        let op = trailing_tc::Operands {
            a: a2,
            src: a2,
            a_stride: stride,
            lda,
            v: self.v + (q::v_offset(n, kb) * 4) as u64,
            v_stride: q::v_floats(n),
            t: self.t + (kb * NB * NB * 4) as u64,
            t_stride: q::blocks(n) * NB * NB,
            zcol: self.zcol,
            panel_col: p,
            trail_col: p + NB,
            oflow: 0,
        };
        trailing_tc::launch(
            engine.launch(),
            stream,
            &op,
            (nrow, ntrail, w),
            self.mats,
            plan.warps,
            trailing_tc::Staging {
                depth: plan.stage_depth,
                l2_hints: plan.l2_hints,
            },
            row_split,
        )
    }
}
