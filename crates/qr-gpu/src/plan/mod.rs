//! Plans: what factors a shape on a device. `plan()` (choose.rs) is the one
//! place that decides; a `Plan` is a sum type (the whole-matrix kernel, or
//! the panel loop's meeting, panel, update and schedule) that the engine
//! executes as it stands. A plan prints what launches and can be forced, so
//! that every strategy can be tested on its own.

use std::fmt;
use std::str::FromStr;

use qr_core::{QrError, Shape};

use crate::kernels::panel::{self, reg as panelreg};
use crate::kernels::{KernelSource, smem};

pub use crate::kernels::smem::Geometry as SmemGeometry;

mod choose;
mod fit;
pub(crate) mod modules;
mod smem_layout;
#[cfg(test)]
mod tests;

pub use choose::plan;
pub(crate) use fit::STATIC_SMEM_RESERVE;
pub use fit::{has_clusters, panel_fit_rows, smem_fit_n};

/// Most lanes an engine has: the batch groups of one call (`Schedule`'s
/// `lanes`) each queue on their own.
pub(crate) const MAX_LANES: usize = 4;

/// How a batch is factored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Unblocked Householder, one block per matrix, whole matrix in shared memory.
    Smem,
    /// Compact WY with 32-column panels: one block per matrix factors each
    /// panel in shared memory, cuBLAS applies it to the trailing matrix.
    Blocked,
    /// As `Blocked`, with each panel's rows split over the blocks of a
    /// thread-block cluster that read each other's shared memory (sm_90 and
    /// later): few matrices keep more SMs busy and each reflector's chain of
    /// rows is shorter.
    Cluster,
    /// As `Blocked`, with each panel's rows split over several blocks per
    /// matrix that meet in global memory (cooperative launch): panels too
    /// tall for a cluster, or devices without clusters.
    Large,
}

impl Strategy {
    /// Every strategy.
    pub const ALL: [Strategy; 4] = [
        Strategy::Smem,
        Strategy::Blocked,
        Strategy::Cluster,
        Strategy::Large,
    ];

    /// The name used by `FromStr`/`Display`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Smem => "smem",
            Self::Blocked => "blocked",
            Self::Cluster => "cluster",
            Self::Large => "large",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = QrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|st| st.name() == s)
            .ok_or_else(|| QrError::Unsupported {
                message: format!(
                    "unknown GPU strategy `{s}` (expected smem, blocked, cluster or large)"
                ),
            })
    }
}

/// The strategy and launch parameters chosen for one shape on one device:
/// built by [`plan()`](crate::plan()) alone, and exactly what the engine
/// launches (nothing downstream re-decides it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The shape planned for.
    pub shape: Shape,
    /// Whether the strategy was forced rather than chosen.
    pub forced: bool,
    /// What runs.
    pub route: Route,
    /// Why this strategy.
    pub reason: String,
}

/// A change made to every plan a backend makes, after the planner: how
/// tests and sweeps set a plan field that no measured choice sets (a
/// launch-by-launch run beside a graph's, lanes or a row split on shapes
/// the planner keeps them from). An edited plan counts as forced and says
/// so, and prints and runs as edited.
#[derive(Clone)]
pub struct PlanEdit {
    label: &'static str,
    edit: std::sync::Arc<dyn Fn(&mut Plan) + Send + Sync>,
}

impl PlanEdit {
    /// `edit`, named `label` in the plans it changes.
    pub fn new(label: &'static str, edit: impl Fn(&mut Plan) + Send + Sync + 'static) -> Self {
        Self {
            label,
            edit: std::sync::Arc::new(edit),
        }
    }

    /// `plan` as edited: forced, its reason naming the edit.
    pub fn apply(&self, plan: &mut Plan) {
        (self.edit)(plan);
        plan.forced = true;
        plan.reason = format!("{}; edited: {}", plan.reason, self.label);
    }

    /// A plan edit that changes a blocked plan's tensor-core update with
    /// `f` (other plans stay as planned).
    pub fn tensor(
        label: &'static str,
        f: impl Fn(&mut TensorUpdate) + Send + Sync + 'static,
    ) -> Self {
        Self::new(label, move |p| {
            if let Route::Blocked(Blocked {
                update: Update::Tensor(t),
                ..
            }) = &mut p.route
            {
                f(t);
            }
        })
    }

    /// Every blocked plan queued launch by launch, as a plan outside a
    /// graph is: the side a graph is compared with.
    pub fn launch_by_launch() -> Self {
        Self::schedule("launch by launch", |s| s.graph = false)
    }

    /// A plan edit that changes a blocked plan's schedule with `f`.
    pub fn schedule(
        label: &'static str,
        f: impl Fn(&mut Schedule) + Send + Sync + 'static,
    ) -> Self {
        Self::new(label, move |p| {
            if let Route::Blocked(b) = &mut p.route {
                f(&mut b.schedule);
            }
        })
    }
}

impl fmt::Debug for PlanEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PlanEdit({})", self.label)
    }
}

/// The two ways a batch is factored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// One launch: each matrix whole in one block (`smem`).
    Small(SmemGeometry),
    /// 32-column panels, each factored then applied to the columns right
    /// of it (`blocked`, `cluster`, `large`).
    Blocked(Blocked),
}

/// The panel loop of the blocked strategies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// How the blocks of one matrix share each panel's rows.
    pub meeting: Meeting,
    /// The panel kernel.
    pub panel: Panel,
    /// The trailing update.
    pub update: Update,
    /// How the steps are queued.
    pub schedule: Schedule,
}

/// How the blocks of one matrix share each panel's rows; it names the
/// strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meeting {
    /// One block per matrix (`blocked`).
    Alone,
    /// A thread-block cluster of this many blocks that read each other's
    /// shared memory (`cluster`, sm_90 and later).
    Cluster(u32),
    /// This many blocks that meet in global memory behind a counter
    /// barrier, launched cooperatively (`large`; one block meets no one).
    Global(u32),
}

impl Meeting {
    /// Blocks per matrix.
    pub fn groups(self) -> u32 {
        match self {
            Meeting::Alone => 1,
            Meeting::Cluster(k) | Meeting::Global(k) => k.max(1),
        }
    }

    /// The strategy this meeting stands for.
    pub fn strategy(self) -> Strategy {
        match self {
            Meeting::Alone => Strategy::Blocked,
            Meeting::Cluster(_) => Strategy::Cluster,
            Meeting::Global(_) => Strategy::Large,
        }
    }

    /// How the panel kernel's blocks meet.
    pub(crate) fn kernel(self) -> panel::Meeting {
        match self {
            Meeting::Cluster(k) => panel::Meeting::Cluster(k),
            Meeting::Global(k) if k > 1 => panel::Meeting::Global,
            Meeting::Alone | Meeting::Global(_) => panel::Meeting::Alone,
        }
    }
}

/// The panel kernel and its launch parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    /// Each thread holds `rows_per_thread` panel rows in registers
    /// (`panelreg_factor_f32`).
    Registers {
        /// Threads of the first panel's blocks.
        threads: u32,
        /// Panel rows per thread.
        rows_per_thread: u32,
        /// Fewest threads once later, shorter panels shrink the block
        /// (`Tuning::reg_panel_alone_min_threads` on the `blocked` path with
        /// at most one matrix per SM, else 64).
        min_threads: u32,
        /// A block alone holds half the columns of twice the rows per
        /// thread (one row per thread, `blocked`).
        halves: bool,
    },
    /// The panel in shared memory (`panel_factor_f32`).
    Shared {
        /// Threads per block.
        threads: u32,
        /// The one-barrier loop loads each next group of rows before
        /// updating the current one (`Tuning::panel_pipeline_max_threads`).
        pipelined: bool,
        /// Each panel but the first applies the previous panel's reflectors
        /// to its own columns itself (`Tuning::panel_fold_min_n`), so no update
        /// launch runs between two panels.
        fold: bool,
    },
}

impl Panel {
    /// Threads of the (first) panel block.
    pub fn threads(self) -> u32 {
        match self {
            Panel::Registers { threads, .. } | Panel::Shared { threads, .. } => threads,
        }
    }

    /// Whether each panel folds in the previous panel's update.
    pub fn folds(self) -> bool {
        matches!(self, Panel::Shared { fold: true, .. })
    }
}

/// The trailing update `A_t -= V (T^T (V^T A_t))`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// Three cuBLAS SGEMMs in full float32.
    Sgemm,
    /// The fused tensor-core kernel (tf32 3-pass, sm_80 and later).
    Tensor(TensorUpdate),
}

/// Launch parameters of the tensor-core update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorUpdate {
    /// Warps per block (4 or 8).
    pub warps: u32,
    /// Depth of the cp.async pipeline that passes V and A2 through rings in
    /// shared memory; 0 streams them from global memory
    /// (`Tuning::tensor_stage_depth`).
    pub stage_depth: u32,
    /// L2 eviction priorities of the ring's A2 copies and of the stores
    /// (`Tuning::tensor_l2_hints`, for batches of at least two L2s; 0
    /// none).
    pub l2_hints: u32,
    /// Most blocks of a cluster splitting a few-tile launch's rows (0 or 1:
    /// none; `Tuning::tensor_row_split`, 0 without clusters).
    pub row_split: u32,
    /// Fewest rows per block of such a split (128).
    pub row_split_min_rows: usize,
}

/// How the blocked steps are queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Each call runs as one CUDA graph (factor/graph.rs; docs/PERF.md, "graphs").
    pub graph: bool,
    /// The panels run ahead of the bulk trailing updates on the priority
    /// stream: with the tensor-core update, more than one panel, and no
    /// global meeting (whose cooperative launch needs its blocks resident at
    /// once).
    pub ahead: bool,
    /// Groups of the batch factored on lanes of their own
    /// (`Tuning::batch_lanes`; 1: the whole batch on the engine's streams).
    pub lanes: u32,
    /// The register panel and the tensor-core update check H and tau for
    /// overflow as they write them (each marks its matrix; the NaN fill
    /// turns the marks into info), instead of separate passes during and
    /// after the factorization. Faster on every such case of the H200
    /// (docs/history/qr-gpu-sessions.md, table "fused checks"), separate /
    /// fused: 40 x 352 564.8 / 549.8 us, 640 x 512 5314.9 / 5148.4,
    /// 60 x 1024 3884.8 / 3747.0, 8 x 2048 5550.4 / 5492.3, 2 x 4096
    /// 10108.4 / 9989.6.
    pub fused_checks: bool,
    /// The input scan (and, unfused, half the overflow check) runs on the
    /// auxiliary stream beside the first steps (`Tuning::checks_aside_min_l2`;
    /// out of place, with the tensor-core update, only).
    pub checks_aside: bool,
}

impl Plan {
    /// The strategy this plan runs.
    pub fn strategy(&self) -> Strategy {
        match &self.route {
            Route::Small(_) => Strategy::Smem,
            Route::Blocked(b) => b.meeting.strategy(),
        }
    }

    /// Whether each call runs as one CUDA graph.
    pub fn graph(&self) -> bool {
        matches!(&self.route, Route::Blocked(b) if b.schedule.graph)
    }

    /// The blocked plan, `None` for `smem`.
    pub fn blocked(&self) -> Option<&Blocked> {
        match &self.route {
            Route::Small(_) => None,
            Route::Blocked(b) => Some(b),
        }
    }

    /// Every launch parameter of the route, by name (`Display` says what
    /// runs in words and leaves some out): `smem: ..` or `blocked: meeting
    /// ..; panel ..; update ..; schedule ..`.
    pub fn parameters(&self) -> String {
        match &self.route {
            Route::Small(g) => format!("smem: {g:?}"),
            Route::Blocked(Blocked {
                meeting,
                panel,
                update,
                schedule,
            }) => format!(
                "blocked: meeting {meeting:?}; panel {panel:?}; update {update:?}; \
                 schedule {schedule:?}"
            ),
        }
    }

    /// The `-D` defines this plan compiles its kernels with.
    pub fn defines(&self) -> Vec<(String, String)> {
        self.kernel().1
    }

    /// The kernel family of this plan's first panel (or of its whole
    /// matrices, `Smem`) and its `-D` defines.
    pub(crate) fn kernel(&self) -> (&'static KernelSource, Vec<(String, String)>) {
        let b = match &self.route {
            Route::Small(g) => return (&smem::SOURCE, smem::defines(g.tpc, g.rows, g.warp)),
            Route::Blocked(b) => b,
        };
        let meeting = b.meeting.kernel();
        match b.panel {
            Panel::Registers {
                threads,
                rows_per_thread,
                halves,
                ..
            } => (
                &panelreg::SOURCE,
                panelreg::defines(threads, rows_per_thread, meeting.cluster_size(), halves),
            ),
            Panel::Shared {
                threads,
                pipelined,
                fold,
            } => (
                &panel::SOURCE,
                panel::defines(threads, meeting, panel::Variant { pipelined, fold }),
            ),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.forced { "forced" } else { "chosen" };
        let (strategy, shape, reason) = (self.strategy(), self.shape, &self.reason);
        let b = match &self.route {
            Route::Small(g) => {
                let kernel = match g.rows {
                    _ if g.warp => "one warp per matrix, every column in its lane's \
                                    registers, no block barrier"
                        .to_string(),
                    1.. => format!(
                        "columns in registers ({} rows a thread), one block barrier per column",
                        g.rows
                    ),
                    0 => format!(
                        "1 block barrier(s) per column, {} KiB shared memory",
                        smem::matrix_bytes(shape.n(), g.lda as usize).div_ceil(1024)
                    ),
                };
                return write!(
                    f,
                    "{strategy} ({how}) for {shape}: {} threads, {} per column, {kernel}; {reason}",
                    g.threads, g.tpc
                );
            }
            Route::Blocked(b) => b,
        };
        let panel = match b.panel {
            Panel::Registers {
                rows_per_thread,
                halves,
                ..
            } => format!(
                " holding {rows_per_thread} panel rows each in registers{}",
                if halves {
                    ", by halves of 16 columns"
                } else if strategy == Strategy::Cluster {
                    ", one cluster meeting per reflector"
                } else {
                    ""
                }
            ),
            Panel::Shared { fold, .. } => match (b.meeting.kernel().one_barrier(), fold) {
                (true, false) => ", one barrier per reflector",
                (true, true) => {
                    ", one barrier per reflector, the previous panel's update of its \
                     columns folded in"
                }
                _ => "",
            }
            .to_string(),
        };
        let update = match b.update {
            Update::Tensor(t) => format!(
                "tensor cores (tf32 3-pass, {}-warp blocks{})",
                t.warps,
                if t.row_split > 1 {
                    format!(
                        "; launches of few tiles (half the SMs at most) split their rows over \
                         clusters of up to {} blocks",
                        t.row_split.min(8)
                    )
                } else {
                    String::new()
                }
            ),
            Update::Sgemm => "cuBLAS SGEMM".to_string(),
        };
        let s = b.schedule;
        write!(
            f,
            "{strategy} ({how}) for {shape}: 32-column panels, {} block(s) of {} threads per \
             matrix{panel}, trailing update on {update}{}{}{}{}; {reason}",
            b.meeting.groups(),
            b.panel.threads(),
            if s.ahead {
                ", panels ahead of it on a priority stream"
            } else {
                ""
            },
            if s.graph { ", as one CUDA graph" } else { "" },
            if s.fused_checks {
                ", H and tau checked for overflow as they are written"
            } else {
                ""
            },
            if s.lanes > 1 {
                format!(", the batch in {} groups on streams of their own", s.lanes)
            } else {
                String::new()
            },
        )
    }
}
