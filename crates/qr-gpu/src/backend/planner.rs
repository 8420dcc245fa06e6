//! What each operation launches for a shape on a device, decided from the
//! device's description, the tuning and a forced strategy alone: the same
//! answers with a device (`GpuBackend` asks it) or without one (`qr plan
//! --device-model`, the golden manifest).

use qr_core::{Operation, QrError, Shape};

use crate::device::probe::DeviceInfo;
use crate::factor::q::OnChip;
use crate::kernels::trailing_tc::q as qk;
use crate::plan::{self, Plan, PlanEdit, Route, Strategy, Update};
use crate::tuning::Tuning;

/// The planner of one device, tuning and forced strategy.
#[derive(Clone, Copy, Debug)]
pub struct Planner<'a> {
    device: &'a DeviceInfo,
    tuning: &'a Tuning,
    forced: Option<Strategy>,
    edit: Option<&'a PlanEdit>,
}

impl<'a> Planner<'a> {
    /// Plans for `device` with `tuning`, `forced` taken for every shape
    /// (`None`: the planner chooses).
    pub fn new(device: &'a DeviceInfo, tuning: &'a Tuning, forced: Option<Strategy>) -> Self {
        Self {
            device,
            tuning,
            forced,
            edit: None,
        }
    }

    /// The same planner, each plan changed by `edit` after it is made.
    pub fn with_edit(self, edit: Option<&'a PlanEdit>) -> Self {
        Self { edit, ..self }
    }

    /// geqrf's plan for `shape`.
    pub fn plan(&self, shape: Shape) -> Result<Plan, QrError> {
        let p = plan::plan(shape, self.device, self.tuning, self.forced)?;
        Ok(self.edited(p))
    }

    fn edited(&self, mut p: Plan) -> Plan {
        if let Some(edit) = self.edit {
            edit.apply(&mut p);
        }
        p
    }

    /// The tensor-core update settings `orgqr` and `ormqr` use for `shape`:
    /// its geqrf plan's, or, where that plan is the whole-matrix kernel,
    /// the blocked plan's of the same shape.
    pub fn q_plan(&self, shape: Shape) -> Result<Plan, QrError> {
        let p = self.plan(shape)?;
        if p.strategy() != Strategy::Smem {
            return Ok(p);
        }
        let p = plan::plan(shape, self.device, self.tuning, Some(Strategy::Blocked))?;
        Ok(self.edited(p))
    }

    /// The trailing update of [`Planner::q_plan`].
    pub(crate) fn q_update(&self, shape: Shape) -> Result<Update, QrError> {
        match self.q_plan(shape)?.route {
            Route::Blocked(b) => Ok(b.update),
            Route::Small(_) => Err(QrError::Unsupported {
                message: format!("no blocked plan for {shape} to take the update settings of"),
            }),
        }
    }

    /// How `orgqr` (or `ormqr`) applies the blocks for `shape`.
    pub(crate) fn on_chip(&self, shape: Shape, ormqr: bool) -> OnChip {
        OnChip::choose(shape.n(), self.device, self.tuning, ormqr)
    }

    /// What `op` launches for `shape`, in words: the order of the blocks,
    /// the update's plan, and the steps around them. A forced strategy
    /// forces the update settings of that strategy's plan here too.
    pub fn describe_op(&self, shape: Shape, op: Operation) -> Result<String, QrError> {
        let blocks = shape.n().div_ceil(qk::NB);
        let on_chip = self.on_chip(shape, matches!(op, Operation::Ormqr(_))).0;
        let apply = |what: &str| -> Result<String, QrError> {
            let how = if let Some(cluster) = on_chip {
                let room = qk::apply_bytes(shape.n(), cluster) / 1024;
                let blocks = match cluster {
                    1 => format!("one block's shared memory ({room} KiB)"),
                    c => format!("the shared memory of a cluster of {c} blocks ({room} KiB each)"),
                };
                format!(
                    "then on chip: one launch, each 32-column tile of the result in {blocks} \
                     taking {what}"
                )
            } else {
                format!(
                    "then one tensor-core update per block, {what}, with the update settings of {}",
                    self.q_plan(shape)?
                )
            };
            Ok(format!(
                "{op} for {shape}: V and T of all {blocks} 32-column blocks in one launch, {how}; \
                 then the per-matrix checks"
            ))
        };
        match op {
            Operation::Geqrf => Ok(self.plan(shape)?.to_string()),
            Operation::Orgqr if on_chip.is_some() => {
                apply("its own block first, then each block left of it, last to first")
            }
            Operation::Orgqr => apply(
                "last block first over Q[p.., p + 32..], the block's own columns formed with V and T",
            ),
            Operation::Ormqr(apply_q) => {
                let backward = (apply_q.side == qr_core::Side::Left)
                    == (apply_q.transpose == qr_core::Transpose::No);
                let order = match (backward, on_chip.is_some()) {
                    (true, true) => "every block, last first",
                    (true, false) => "last block first (reflectors reversed: Q_k, not Q_k^T)",
                    (false, _) => "every block, first first",
                };
                let side = if apply_q.side == qr_core::Side::Right {
                    ", C transposed in and out"
                } else {
                    ""
                };
                apply(&format!("{order}{side}"))
            }
            Operation::Qr => Ok(format!(
                "qr for {shape}: geqrf ({}), then {}, then R from H",
                self.plan(shape)?,
                self.describe_op(shape, Operation::Orgqr)?
            )),
        }
    }
}
