//! Launcher of the panel factorization of the `blocked` and `large` paths.

pub(crate) mod reg;

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use qr_core::QrError;

use super::{KernelSource, grid_dim};
use crate::device::launch::Launch;
use crate::error::DriverContext;

const FACTOR: &str = "panel_factor_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "panel",
    // The helpers (meetings, row passes), then the kernel: one source in
    // this order (tools/cudasim joins the same list).
    source: concat!(
        include_str!("../prelude.cu"),
        include_str!("panel_ops.cu"),
        include_str!("panel.cu")
    ),
    entries: &[FACTOR],
    defines: &[
        "PANEL_THREADS",
        "PANEL_LD",
        "PANEL_CLUSTER",
        "PANEL_ONEBAR",
        "PANEL_PIPE",
        "PANEL_FOLD",
    ],
};

/// Panel width; the kernel maps one lane to one panel column.
pub(crate) const NB: usize = 32;
/// Shared-memory leading dimension of a panel row: odd, so that the lanes
/// of a warp reading one column down the rows hit distinct banks.
pub(crate) const LD: usize = NB + 1;
/// Leading dimension of the one-barrier variants: their lanes never read
/// down a column, so unpadded rows are conflict-free (one 128-byte
/// wavefront each).
const PACKED_LD: usize = NB;
/// Shared-memory bytes per panel row (the larger of the two layouts).
pub(crate) const ROW_BYTES: usize = LD * std::mem::size_of::<f32>();

/// Static shared memory of a folding panel block, rounded up (NVRTC 13.5,
/// sm_90: 20,992 bytes at 512 threads): the planner's bound, with the
/// rows and `Variant::fold_bytes`, on a block's shared memory.
pub(crate) const FOLD_STATIC_BYTES: usize = 24 << 10;

/// How the blocks of one matrix meet to add their partial sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Meeting {
    /// One block per matrix: nothing to add.
    Alone,
    /// Through global memory behind a counter barrier (cooperative launch).
    Global,
    /// A thread-block cluster of this many blocks (sm_90 and later).
    Cluster(u32),
}

impl Meeting {
    /// Blocks per thread-block cluster, 0 when the blocks form none.
    pub(crate) fn cluster_size(self) -> u32 {
        match self {
            Meeting::Cluster(k) => k,
            Meeting::Alone | Meeting::Global => 0,
        }
    }

    /// Whether the kernel meets its warps once per reflector instead of
    /// twice (`PANEL_ONEBAR`): a block alone always does.
    pub(crate) fn one_barrier(self) -> bool {
        self == Meeting::Alone
    }

    /// Shared-memory leading dimension of a panel row.
    fn ld(self) -> usize {
        if self.one_barrier() { PACKED_LD } else { LD }
    }

    /// Shared-memory bytes of one panel row.
    pub(crate) fn row_bytes(self) -> usize {
        self.ld() * std::mem::size_of::<f32>()
    }
}

/// Variants of the panel kernel beyond its block shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Variant {
    /// The one-barrier float32 loop loads each next group of rows before
    /// updating the current one (`Tuning::panel_pipeline_max_threads`).
    pub pipelined: bool,
    /// A one-barrier panel first applies the previous panel's reflectors
    /// to its own columns (`Tuning::panel_fold_min_n`), so no update launch of
    /// those columns runs between two panels.
    pub fold: bool,
}

impl Variant {
    /// The variant's flags as compiled for `meeting` and blocks of
    /// `threads`: each applies only where the kernel supports it.
    pub(crate) fn effective(self, meeting: Meeting, threads: u32) -> Variant {
        let one_barrier = meeting.one_barrier();
        Variant {
            pipelined: self.pipelined && one_barrier,
            // The fold's W pass maps 4 x 4 blocks onto 64 threads at a time.
            fold: self.fold && one_barrier && threads >= 64 && threads % 64 == 0,
        }
    }

    /// Dynamic shared memory the fold adds to a panel of `rows` rows in
    /// blocks of `threads` (0 without it): the previous panel's V over
    /// `rows + 32` rows, a 32 x 32 partial per 64 threads, W and W2.
    pub(crate) fn fold_bytes(self, meeting: Meeting, threads: u32, rows: usize) -> usize {
        if !self.effective(meeting, threads).fold {
            return 0;
        }
        let partials = (threads as usize / 64 + 2) * NB * NB;
        ((rows + NB) * NB + partials) * std::mem::size_of::<f32>()
    }
}

/// The `-D` defines of this family for blocks of `threads`.
pub(crate) fn defines(threads: u32, meeting: Meeting, variant: Variant) -> Vec<(String, String)> {
    let v = variant.effective(meeting, threads);
    vec![
        ("PANEL_THREADS".to_string(), threads.to_string()),
        ("PANEL_LD".to_string(), meeting.ld().to_string()),
        (
            "PANEL_CLUSTER".to_string(),
            meeting.cluster_size().to_string(),
        ),
        (
            "PANEL_ONEBAR".to_string(),
            u8::from(meeting.one_barrier()).to_string(),
        ),
        ("PANEL_PIPE".to_string(), u8::from(v.pipelined).to_string()),
        ("PANEL_FOLD".to_string(), u8::from(v.fold).to_string()),
    ]
}

/// Device buffers one panel launch reads and writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PanelBuffers {
    /// The matrices being factored in place (batch * n * n).
    pub h: u64,
    /// Where the panel is read from: `h`, or for the first panel of an
    /// out-of-place factorization the input (same shape), so that the copy
    /// into `h` rides on the first pass.
    pub src: u64,
    /// Per matrix, one past its last non-zero column (batch ints): a panel
    /// right of it is all zeros and only writes tau = 0.
    pub zcol: u64,
    /// Explicit V per matrix (n * NB).
    pub v: u64,
    /// T per matrix (NB * NB).
    pub t: u64,
    /// tau (batch * n).
    pub tau: u64,
    /// Cross-block partial sums (batch * 2 * groups * NB doubles).
    pub partials: u64,
    /// The diagonal row of the current reflector (batch * 2 * NB floats).
    pub rowbuf: u64,
    /// Barrier counters and their bases (2 * batch), zeroed before the
    /// factorization.
    pub counters: u64,
    /// The writers' overflow marks (batch ints, zeroed before the
    /// factorization; `Schedule::fused_checks`), or 0: the register panel and
    /// the tensor-core update mark a matrix whose final H or tau values
    /// they write hold a non-finite value.
    pub oflow: u64,
}

/// The compiled panel kernel for blocks of `threads`, its shared-memory limit
/// raised to `max_rows` rows.
pub(crate) fn function(
    k: &Launch,
    threads: u32,
    meeting: Meeting,
    variant: Variant,
    max_rows: usize,
) -> Result<CudaFunction, QrError> {
    let f = k.function(&SOURCE, &defines(threads, meeting, variant), FACTOR)?;
    let bytes = max_rows * meeting.row_bytes() + variant.fold_bytes(meeting, threads, max_rows);
    super::raise_dynamic_smem(&f, bytes, FACTOR)?;
    Ok(f)
}

/// One panel launch on `stream`: columns `p..p + w` of matrices
/// `mat0..mat0 + mats`, rows split over `groups` blocks per matrix; with
/// `prev` (the previous panel's V and T buffers, a variant with `fold`),
/// the previous panel's reflectors are applied to these columns first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    stream: &CudaStream,
    f: &CudaFunction,
    threads: u32,
    meeting: Meeting,
    variant: Variant,
    groups: u32,
    n: usize,
    p: usize,
    w: usize,
    mat0: usize,
    mats: usize,
    buf: &PanelBuffers,
    prev: Option<(u64, u64)>,
) -> Result<(), QrError> {
    let nrow = n - p;
    let chunk = nrow.div_ceil(groups as usize);
    let fold = prev.is_some() && variant.effective(meeting, threads).fold && p >= NB;
    let bytes = chunk * meeting.row_bytes()
        + if fold {
            variant.fold_bytes(meeting, threads, chunk)
        } else {
            0
        };
    let cfg = LaunchConfig {
        grid_dim: (groups, grid_dim(mats)?, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: bytes as u32,
    };
    let (vprev, tprev) = prev.filter(|_| fold).unwrap_or((0, 0));
    let fold_i = i32::from(fold);
    let (n, p, w, g, m0) = (n as i32, p as i32, w as i32, groups as i32, mat0 as i32);
    let mut b = stream.launch_builder(f);
    b.arg(&buf.h)
        .arg(&buf.src)
        .arg(&buf.zcol)
        .arg(&buf.v)
        .arg(&buf.t)
        .arg(&buf.tau)
        .arg(&buf.partials)
        .arg(&buf.rowbuf)
        .arg(&buf.counters)
        .arg(&n)
        .arg(&p)
        .arg(&w)
        .arg(&g)
        .arg(&m0)
        .arg(&vprev)
        .arg(&tprev)
        .arg(&fold_i);
    if meeting != Meeting::Global {
        // SAFETY: every buffer is sized for the whole batch by the workspace
        // (h: batch*n*n, v: batch*n*NB, t: batch*NB*NB, tau: batch*n); the
        // blocks touch only matrices mat0..mat0+mats, which lie in the batch,
        // and the dynamic shared memory holds `chunk` rows as the kernel expects
        // (and the fold's V, partials, W and W2 after them when it folds, the
        // previous panel's V and T then being buffers of the same sizes).
        // A cluster's blocks are co-scheduled by the hardware (the kernel's
        // cluster size equals `groups`, the grid's x extent).
        unsafe { b.launch(cfg) }.ctx("launching panel_factor_f32")?;
    } else {
        // SAFETY: as above, plus the partial-sum, row and counter buffers
        // sized for `groups`; the cooperative launch guarantees the blocks
        // of one matrix are co-resident, which their barrier relies on (the
        // caller sized `mats` from the occupancy so that the launch fits).
        unsafe { b.launch_cooperative(cfg) }.ctx("cooperative launch of panel_factor_f32")?;
    }
    Ok(())
}
