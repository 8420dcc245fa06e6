//! Plans: which strategy factors a shape on a device, with its launch
//! parameters. A plan can be printed and forced, so that every strategy can
//! be tested on its own.

use std::fmt;
use std::str::FromStr;

use qr_core::{QrError, Shape};

use crate::kernels::panel::{self, reg as panelreg};
use crate::kernels::{KernelSource, smem};

mod choose;
mod fit;
mod smem_layout;
#[cfg(test)]
mod tests;

pub use choose::plan;
pub(crate) use fit::STATIC_SMEM_RESERVE;
pub use fit::{has_clusters, panel_fit_rows, smem_fit_n};

/// Most lanes an engine has: the batch groups of one call (`Plan`'s
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

/// Launch parameters of the panel paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PanelPlan {
    /// Threads per panel block.
    pub threads: u32,
    /// Blocks per matrix sharing each panel's rows (1 on `Blocked`, the
    /// cluster size on `Cluster`).
    pub groups: u32,
    /// Whether the trailing update runs on the fused tensor-core kernel
    /// (tf32 3-pass, sm_80 and later) rather than three cuBLAS SGEMMs.
    pub tensor_trailing: bool,
    /// Panel rows per thread of the register-resident panel kernel (one
    /// block of `threads` per matrix), 0 for the shared-memory kernel.
    pub rows_per_thread: u32,
    /// Fewest threads of a register panel block once later panels shrink
    /// it (`Tuning::reg_panel_alone_min_threads` on the `blocked` path with
    /// at most one matrix per SM, else 64).
    pub min_threads: u32,
    /// Whether the one-barrier float32 loop software-pipelines its rows
    /// (`Tuning::panel_pipeline_max_threads`).
    pub pipelined: bool,
    /// Whether each one-barrier panel applies the previous panel's
    /// reflectors to its own columns itself (`Tuning::panel_fold`).
    pub fold: bool,
    /// Whether the input scan and half the overflow check run on the
    /// auxiliary stream beside the factorization (`Tuning::checks_aside`;
    /// out of place only).
    pub checks_aside: bool,
    /// Warps per block of the tensor-core update (4 or 8).
    pub tensor_warps: u32,
    /// Depth of the tensor-core update's cp.async pipeline that passes V
    /// and A2 through rings in shared memory; 0 streams them from global
    /// memory (`Tuning::tensor_stage_depth`).
    pub tensor_stage_depth: u32,
    /// L2 eviction priorities of the ring's A2 copies and of the update's
    /// stores (`Tuning::tensor_l2_hints`, for batches of at least
    /// `Tuning::tensor_l2_hints_min_l2` L2s; 0 none).
    pub tensor_l2_hints: u32,
    /// Most blocks of a cluster splitting a few-tile update's rows (0 or 1:
    /// none; `Tuning::tensor_row_split`, 0 without clusters).
    pub tensor_row_split: u32,
    /// Fewest rows per block of such a split
    /// (`Tuning::tensor_row_split_min_rows`).
    pub tensor_row_split_min_rows: usize,
    /// Groups of the batch factored on lanes of their own
    /// (`Tuning::batch_lanes`; 1: the whole batch on the engine's streams).
    pub lanes: u32,
    /// The kernels check H and tau for overflow as they write them
    /// (each marks its matrix; the NaN fill turns the marks into info),
    /// instead of separate passes over H and tau during and after the
    /// factorization: the register panel and the tensor-core update, without
    /// a fold. Faster on every such case of the H200
    /// (docs/history/qr-gpu-sessions.md, table "fused checks"), separate /
    /// fused: 40 x 352 564.8 / 549.8 us, 640 x 512 5314.9 / 5148.4,
    /// 60 x 1024 3884.8 / 3747.0, 8 x 2048 5550.4 / 5492.3, 2 x 4096
    /// 10108.4 / 9989.6; the other plans check in separate passes.
    pub fused_checks: bool,
    /// The register panel of a block alone holds half the columns of twice
    /// the rows per thread (one row per thread, `blocked`).
    pub reg_halves: bool,
}

/// The strategy and launch parameters chosen for one shape on one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The shape planned for.
    pub shape: Shape,
    /// The strategy.
    pub strategy: Strategy,
    /// Whether the strategy was forced rather than chosen.
    pub forced: bool,
    /// `Smem`: threads per column.
    pub tpc: u32,
    /// `Smem`: threads per block.
    pub threads: u32,
    /// `Smem`: rows per thread of the kernel that keeps every column in its
    /// threads' registers (`Tuning::smem_register_max_rows`), 0 for a kernel with
    /// the matrix in shared memory.
    pub rows: u32,
    /// `Smem` with the matrix in shared memory: its leading dimension (the
    /// one-barrier kernel's conflict-free padding where it fits, else n | 1).
    pub lda: u32,
    /// `Smem`: one warp per matrix, every column in its lane's registers
    /// (`Tuning::smem_warp_max_n`; orders up to 32).
    pub warp: bool,
    /// `Blocked`/`Large`: panel launch parameters.
    pub panel: PanelPlan,
    /// Whether each call runs as one CUDA graph (`Tuning::graphs`).
    pub graph: bool,
    /// Why this strategy.
    pub reason: String,
}

impl Plan {
    /// The whole-matrix kernel's launch parameters (`Smem`).
    pub(crate) fn smem_geometry(&self) -> smem::Geometry {
        smem::Geometry {
            tpc: self.tpc,
            threads: self.threads,
            rows: self.rows,
            lda: self.lda,
            warp: self.warp,
        }
    }

    /// The `-D` defines this plan compiles its kernels with.
    pub fn defines(&self) -> Vec<(String, String)> {
        self.kernel().1
    }

    /// The kernel family of this plan's first panel (or of its whole
    /// matrices, `Smem`) and its `-D` defines.
    pub(crate) fn kernel(&self) -> (&'static KernelSource, Vec<(String, String)>) {
        match self.strategy {
            Strategy::Smem => (&smem::SOURCE, smem::defines(self.tpc, self.rows, self.warp)),
            Strategy::Blocked | Strategy::Cluster if self.panel.rows_per_thread > 0 => {
                let cluster = self.panel.meeting(self.strategy).cluster_size();
                (
                    &panelreg::SOURCE,
                    panelreg::defines(
                        self.panel.threads,
                        self.panel.rows_per_thread,
                        cluster,
                        self.panel.reg_halves,
                    ),
                )
            }
            Strategy::Blocked | Strategy::Cluster | Strategy::Large => (
                &panel::SOURCE,
                panel::defines(
                    self.panel.threads,
                    self.panel.meeting(self.strategy),
                    self.panel.variant(),
                ),
            ),
        }
    }
}

impl Plan {
    /// Whether the panels run ahead of the bulk trailing updates on the
    /// priority stream: with the tensor-core update and no global meeting
    /// (whose cooperative launch needs its blocks resident at once).
    pub fn runs_ahead(&self) -> bool {
        self.strategy != Strategy::Smem
            && self.panel.tensor_trailing
            && self.panel.meeting(self.strategy) != panel::Meeting::Global
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.forced { "forced" } else { "chosen" };
        match self.strategy {
            Strategy::Smem => write!(
                f,
                "{} ({how}) for {}: {} threads, {} per column, {}; {}",
                self.strategy,
                self.shape,
                self.threads,
                self.tpc,
                match self.rows {
                    _ if self.warp => "one warp per matrix, every column in its lane's \
                                       registers, no block barrier"
                        .to_string(),
                    1.. => format!(
                        "columns in registers ({} rows a thread), one block barrier per column",
                        self.rows
                    ),
                    0 => format!(
                        "1 block barrier(s) per column, {} KiB shared memory",
                        smem::matrix_bytes(self.shape.n(), self.lda as usize).div_ceil(1024)
                    ),
                },
                self.reason
            ),
            _ => write!(
                f,
                "{} ({how}) for {}: 32-column panels, {} block(s) of {} threads per matrix{}, \
                 trailing update on {}{}{}{}{}; {}",
                self.strategy,
                self.shape,
                self.panel.groups,
                self.panel.threads,
                if self.panel.rows_per_thread > 0 {
                    format!(
                        " holding {} panel rows each in registers{}",
                        self.panel.rows_per_thread,
                        if self.panel.reg_halves {
                            ", by halves of 16 columns"
                        } else if self.strategy == Strategy::Cluster {
                            ", one cluster meeting per reflector"
                        } else {
                            ""
                        }
                    )
                } else {
                    let meeting = self.panel.meeting(self.strategy);
                    let v = self.panel.variant().effective(meeting, self.panel.threads);
                    match (meeting.one_barrier(), v.fold) {
                        (true, false) => ", one barrier per reflector",
                        (true, true) => {
                            ", one barrier per reflector, the previous panel's update of its \
                             columns folded in"
                        }
                        _ => "",
                    }
                    .to_string()
                },
                if self.panel.tensor_trailing {
                    format!(
                        "tensor cores (tf32 3-pass, {}-warp blocks{})",
                        self.panel.tensor_warps,
                        if self.panel.tensor_row_split > 1 {
                            format!(
                                "; launches of few tiles (half the SMs at most) split their rows over clusters \
                                 of up to {} blocks",
                                self.panel.tensor_row_split.min(8)
                            )
                        } else {
                            String::new()
                        }
                    )
                } else {
                    "cuBLAS SGEMM".to_string()
                },
                if self.runs_ahead() {
                    ", panels ahead of it on a priority stream"
                } else {
                    ""
                },
                if self.graph {
                    ", as one CUDA graph"
                } else {
                    ""
                },
                if self.panel.fused_checks {
                    ", H and tau checked for overflow as they are written"
                } else {
                    ""
                },
                if self.panel.lanes > 1 {
                    format!(
                        ", the batch in {} groups on streams of their own",
                        self.panel.lanes
                    )
                } else {
                    String::new()
                },
                self.reason
            ),
        }
    }
}

impl PanelPlan {
    /// How the panel blocks of one matrix meet under `strategy`.
    pub(crate) fn meeting(&self, strategy: Strategy) -> panel::Meeting {
        match strategy {
            Strategy::Cluster => panel::Meeting::Cluster(self.groups),
            _ if self.groups <= 1 => panel::Meeting::Alone,
            _ => panel::Meeting::Global,
        }
    }

    /// The shared-memory panel kernel's variant this plan compiles.
    pub(crate) fn variant(&self) -> panel::Variant {
        panel::Variant {
            pipelined: self.pipelined,
            fold: self.fold,
        }
    }
}
