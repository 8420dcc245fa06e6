//! The device-resident factorization: every step queued on the engine's
//! stream, no host synchronization.

pub(crate) mod blocked;
pub(crate) mod engine;
pub(crate) mod graph;
pub(crate) mod q;

use cudarc::driver::CudaStream;
use qr_core::{QrError, Shape};

use crate::device::launch::Launch;
use crate::factor::engine::{Engine, Lane};
use crate::kernels::{smem, util};
use crate::plan::{Blocked, MAX_LANES, Plan, Route};

/// Device pointers of one factorization's operands.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands {
    /// Input batch.
    pub a: u64,
    /// H.
    pub h: u64,
    /// tau.
    pub tau: u64,
    /// info.
    pub info: u64,
}

/// Factors the batch at `ops.a` into `ops.h`, `ops.tau` and `ops.info`
/// (device pointers of `shape`'s lengths) as `plan` says: as one CUDA graph
/// where the plan says so (`Schedule::graph`; graph.rs).
pub(crate) fn geqrf(
    engine: &Engine,
    plan: &Plan,
    shape: Shape,
    ops: Operands,
) -> Result<(), QrError> {
    let _queueing = engine.queueing();
    if let Some(b) = plan.blocked().filter(|b| b.schedule.graph)
        && shape.batch() > 0
        && shape.n() > 0
    {
        let key = graph::Key {
            plan: plan.clone(),
            operands: [ops.a, ops.h, ops.tau, ops.info],
            workspace: engine.workspace().addresses(engine.stream()),
        };
        let lanes = (engine.lane(0), engine.capture_lane());
        let mut queue = |lane: &Lane| queue_blocked(engine, lane, b, shape, ops);
        return engine.graphs().run(lanes, key, &mut queue);
    }
    queue(engine, plan, shape, ops)
}

/// Queues the factorization of `geqrf` launch by launch.
fn queue(engine: &Engine, plan: &Plan, shape: Shape, ops: Operands) -> Result<(), QrError> {
    let Operands { a, h, tau, info } = ops;
    let Some(b) = without_scratch(engine.launch(), engine.stream(), plan, shape, ops)? else {
        return Ok(());
    };
    let lanes = (b.schedule.lanes as usize).clamp(1, MAX_LANES.min(shape.batch()));
    if lanes == 1 {
        return queue_blocked(engine, engine.lane(0), b, shape, ops);
    }
    // Groups of the batch on lanes of their own (`Schedule::lanes`): each
    // group's chain of panels waits only for its own updates, so one
    // group's latency-bound panels run beside another's memory-bound
    // updates. Every matrix sees the same kernels in the same order as in
    // one lane, so the bits are the same.
    let (n, batch) = (shape.n(), shape.batch());
    for l in 1..lanes {
        engine.lane(l).fork_from(engine.stream())?;
    }
    let len = shape.matrix_len() as u64 * 4;
    let mut m0 = 0;
    let mut queued = Ok(());
    for l in 0..lanes {
        let mats = batch / lanes + usize::from(l < batch % lanes);
        let at = |base: u64, per: u64| base + m0 as u64 * per;
        let part = Operands {
            a: at(a, len),
            h: at(h, len),
            tau: at(tau, n as u64 * 4),
            info: at(info, 4),
        };
        m0 += mats;
        // The group's own shape: the launches size their grids by it.
        queued =
            Shape::new(mats, n).and_then(|sub| queue_blocked(engine, engine.lane(l), b, sub, part));
        if queued.is_err() {
            break;
        }
    }
    // Joined even after a failure, so that no lane's queued work outlives
    // the call unordered against the engine's stream.
    for l in 1..lanes {
        engine.lane(l).join_into(engine.stream())?;
    }
    queued
}

/// Queues on `stream` itself what needs neither the engine's streams nor
/// its scratch: an empty batch (only info) and an `smem` plan (one launch:
/// the kernel holds each whole matrix, flags and NaN-fills non-finite
/// inputs and overflowed outputs, writes info). Returns the blocked plan
/// left to queue, if any.
pub(crate) fn without_scratch<'p>(
    launch: &Launch,
    stream: &CudaStream,
    plan: &'p Plan,
    shape: Shape,
    ops: Operands,
) -> Result<Option<&'p Blocked>, QrError> {
    let Operands { a, h, tau, info } = ops;
    if shape.batch() == 0 {
        return Ok(None);
    }
    if shape.n() == 0 {
        launch.memset_u32(stream, info, 0, shape.batch())?;
        return Ok(None);
    }
    match &plan.route {
        Route::Small(g) => {
            smem::launch(launch, stream, (shape, *g), (a, h, tau, info))?;
            Ok(None)
        }
        Route::Blocked(b) => Ok(Some(b)),
    }
}

/// Queues the blocked factorization of `shape` on `lane`, its checks and
/// the NaN fill of non-finite matrices included.
fn queue_blocked(
    engine: &Engine,
    lane: &Lane,
    plan: &Blocked,
    shape: Shape,
    ops: Operands,
) -> Result<(), QrError> {
    let Operands { h, tau, info, .. } = ops;
    // Non-finite matrices are flagged first (inside, by the scan that also
    // finds the zero columns); they are factored with the rest (NaN only
    // flows through their own blocks) and overwritten with NaN last.
    let checks = blocked::factor(engine, lane, plan, shape, ops)?;
    // A finite matrix whose R or reflectors did not fit f32 is flagged too:
    // marked by the kernels as they wrote (the fill turns the marks into
    // info), or checked here (left of and above `split`, the check is
    // queued already).
    if checks.oflow == 0 {
        let (split, n) = (checks.split, shape.n());
        let rest = util::Region {
            rows: (split, n),
            cols: (split, n),
            taus: (split, n),
        };
        util::overflow_in(engine.launch(), lane.stream(), shape, (h, tau, info), rest)?;
    }
    util::nanfill(
        engine.launch(),
        lane.stream(),
        shape,
        (h, tau),
        info,
        checks.oflow,
    )
}
