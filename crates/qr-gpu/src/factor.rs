//! The device-resident factorization: every step queued on the engine's
//! stream, no host synchronization.

use qr_core::{QrError, Shape};

use crate::bench::Operands;
use crate::blocked;
use crate::engine::Engine;
use crate::graph;
use crate::kernels::{smem, util};
use crate::plan::{Plan, Strategy};

/// Factors the batch at `ops.a` into `ops.h`, `ops.tau` and `ops.info`
/// (device pointers of `shape`'s lengths) as `plan` says: as one CUDA graph
/// where the plan says so (`Plan`'s `graph`; graph.rs).
pub(crate) fn geqrf(
    engine: &Engine,
    plan: &Plan,
    shape: Shape,
    ops: Operands,
) -> Result<(), QrError> {
    let _queueing = engine.queueing();
    if plan.graph && shape.batch() > 0 && shape.n() > 0 {
        let key = graph::Key {
            plan: plan.clone(),
            operands: [ops.a, ops.h, ops.tau, ops.info],
            workspace: engine.workspace().addresses(engine.stream()),
        };
        let mut queue = || queue(engine, plan, shape, ops);
        return engine.graphs().run(engine.stream(), key, &mut queue);
    }
    queue(engine, plan, shape, ops)
}

/// Queues the factorization of `geqrf` launch by launch.
fn queue(engine: &Engine, plan: &Plan, shape: Shape, ops: Operands) -> Result<(), QrError> {
    let Operands { a, h, tau, info } = ops;
    if shape.batch() == 0 {
        return Ok(());
    }
    if shape.n() == 0 {
        return engine.memset_u32(info, 0, shape.batch());
    }
    if plan.strategy == Strategy::Smem {
        // One launch: the kernel holds the whole matrix and writes info.
        return smem::launch(engine, plan, a, h, tau, info);
    }
    // Non-finite matrices are flagged first (inside, by the scan that also
    // finds the zero columns); they are factored with the rest (NaN only
    // flows through their own blocks) and overwritten with NaN last.
    let split = blocked::factor(engine, plan, shape, ops)?;
    // A finite matrix whose R or reflectors did not fit f32 is flagged too
    // (left of and above `split`, the check is queued already).
    let n = shape.n();
    let rest = util::Region {
        rows: (split, n),
        cols: (split, n),
        taus: (split, n),
    };
    util::overflow_in(engine, engine.stream(), shape, (h, tau, info), rest)?;
    util::nanfill(engine, shape, h, tau, info)
}
