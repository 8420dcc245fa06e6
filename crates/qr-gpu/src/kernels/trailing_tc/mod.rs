//! Launcher of the fused tensor-core trailing update (launch contract:
//! `README.md` beside the kernel; measurements: `docs/perf/trailing_tc.md`).

pub(crate) mod q;

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use qr_core::QrError;

use super::{KernelSource, grid_dim};
use crate::device::launch::Launch;
use crate::error::DriverContext;

const APPLY: &str = "trailing_tc_apply_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "trailing_tc",
    // The helpers (splits, mma, memory, loop bodies), the staging ring,
    // then the kernel: one source in this order (tools/cudasim joins the
    // same list).
    source: concat!(
        include_str!("../prelude.cu"),
        include_str!("trailing_tc_ops.cu"),
        include_str!("trailing_tc_stage.cu"),
        include_str!("trailing_tc.cu")
    ),
    entries: &[APPLY],
    defines: &[
        "TC_SPLIT",
        "TC_BN",
        "TC_WARPS",
        "TC_MIN_BLOCKS",
        "TC_FLUSH",
        "TC_VEC4",
        "TC_STAGE",
        "TC_ROWSPLIT",
        "TC_L2HINT",
    ],
};

/// Columns of the trailing matrix per block (`TC_BN`).
pub(crate) const BN: usize = 32;
/// Warps per SM the register cap allows at 128 registers a thread: blocks
/// per SM (`TC_MIN_BLOCKS`) are this over the block's warps.
const WARPS_PER_SM: u32 = 16;

/// Blocks of `warps` warps each SM keeps resident.
pub(crate) fn resident_blocks(warps: u32) -> u32 {
    WARPS_PER_SM / warps.max(1)
}

/// The defines of the measured choice (docs/perf/trailing_tc.md, "Tiles and
/// speed": tf32 3-pass, 32 columns, per-slab flush, the split's low parts
/// handed to the tensor cores unrounded), `warps` (4 or 8) warps per block,
/// with 16-byte accesses when every A2 row is 16-byte aligned. `stage` (0:
/// off) is the depth of the cp.async pipeline that passes each warp's V and
/// A2 slabs through a ring in shared memory (`Tuning::tensor_stage_depth`).
/// `l2_hints` (0, 1, 2): L2 eviction priorities on A2's ring copies and
/// stores (`Tuning::tensor_l2_hints`; only with `stage` > 0, else 0).
/// Staged, the update pass takes each warp's slabs last to first.
pub(crate) fn defines(
    vec4: bool,
    warps: u32,
    stage: u32,
    row_split: u32,
    l2_hints: u32,
) -> Vec<(String, String)> {
    let warps = if warps == 4 { 4 } else { 8 };
    let l2_hints = if stage > 0 { l2_hints.min(2) } else { 0 };
    // A row-split block runs one per SM (`row_split`), so it may take the
    // registers that keep its cluster meeting free of spills.
    let blocks = if row_split > 1 {
        1
    } else {
        (WARPS_PER_SM / warps).max(1)
    };
    [
        ("TC_SPLIT", "0".to_string()),
        ("TC_BN", "32".to_string()),
        ("TC_WARPS", warps.to_string()),
        ("TC_MIN_BLOCKS", blocks.to_string()),
        ("TC_FLUSH", "1".to_string()),
        ("TC_VEC4", u8::from(vec4).to_string()),
        ("TC_STAGE", stage.to_string()),
        ("TC_ROWSPLIT", row_split.to_string()),
        ("TC_L2HINT", l2_hints.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Tensor-core update operands of one launch (device pointers of matrix 0
/// and element strides between matrices).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands {
    /// Top-left element of A2 (row p, column p + 32 of matrix 0), written.
    pub a: u64,
    /// Where A2 is read from (same offsets and strides): `a` in place, or the
    /// caller's input when the first panel's pass also copies it into H.
    pub src: u64,
    /// Elements between matrices' A2 (n * n).
    pub a_stride: usize,
    /// Leading dimension of A2 rows (n).
    pub lda: usize,
    /// V of matrix 0 (nrow x 32, leading dimension 32).
    pub v: u64,
    /// Elements between matrices' V.
    pub v_stride: usize,
    /// T of matrix 0 (32 x 32).
    pub t: u64,
    /// Elements between matrices' T.
    pub t_stride: usize,
    /// Per matrix (from matrix 0 of the launch), one past its last non-zero
    /// input column: in place, a block whose panel or tile lies right of it
    /// has nothing to do.
    pub zcol: u64,
    /// The panel's first column in the full matrix.
    pub panel_col: usize,
    /// A2's first column in the full matrix.
    pub trail_col: usize,
    /// Per matrix (from matrix 0 of the launch), the writers' overflow mark,
    /// or 0: the update marks a matrix whose first 32 rows of A2 (R's rows
    /// of the panel, final after it) hold a non-finite value.
    pub oflow: u64,
}

/// Dynamic shared memory of the staged kernel: each warp's ring of `depth`
/// pairs of 16-row V and A2 slabs.
pub(crate) fn stage_bytes(warps: u32, depth: u32) -> usize {
    let slab = 16 * BN * std::mem::size_of::<f32>();
    2 * (warps * depth) as usize * slab
}

/// How the update stages its operands through shared memory
/// (`Tuning::tensor_stage_depth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Staging {
    /// cp.async pipeline depth; 0 never stages.
    pub depth: u32,
    /// L2 eviction priorities of the staged update (`Tuning::tensor_l2_hints`): 0
    /// none; 1 A2's second read and its stores (but the launch's first
    /// tile's) evict first; 2 also its first read evicts last.
    pub l2_hints: u32,
}

/// The row-split cluster sizes the kernel compiles (`TC_ROWSPLIT`): `k`
/// rounded down to 1, 2, 4 or 8 (the portable cluster limit).
pub(crate) fn split_size(k: u32) -> u32 {
    match k {
        8.. => 8,
        4..=7 => 4,
        2..=3 => 2,
        _ => 1,
    }
}

/// Blocks of a thread-block cluster that split each tile's rows
/// (`TC_ROWSPLIT`) in a launch of `blocks` tiles over `nrow` rows: the
/// largest power of two up to `max` (at most 8, the portable cluster size)
/// whose blocks, one per SM, take at most half of the `sm_count` SMs, with
/// `min_rows` rows or more per block; 1, no cluster, otherwise. The
/// few-tile launches of few-matrix plans (the look-ahead update of one
/// tile per matrix) then spread over the SMs instead of walking all their
/// rows in one block each, and leave the other half of the SMs to the bulk
/// update they run beside. Half: on the H200 (table "tensor
/// row split") 2 x 4096 and 8 x 2048 gained with their 16 and 64 blocks,
/// 60 x 1024 lost 3.6% with 120 of the 132 SMs.
pub(crate) fn row_split(
    blocks: usize,
    nrow: usize,
    sm_count: u32,
    max: u32,
    min_rows: usize,
) -> u32 {
    let mut k = split_size(max);
    while k > 1
        && (blocks.saturating_mul(k as usize).saturating_mul(2) > sm_count as usize
            || nrow < (k as usize).saturating_mul(min_rows))
    {
        k /= 2;
    }
    k
}

/// `A2 -= V (T^T (V^T A2))` for `mats` matrices, A2 `nrow x ntrail`, panel
/// width `w`, blocks of `warps` (4 or 8) warps, V and A2 staged through
/// shared memory where `staging` asks for it, the rows are 16-byte aligned
/// and a block of its shared memory fits on an SM (else streamed). Each
/// tile's rows are split over a cluster of `row_split` blocks (rounded by
/// `split_size`; 1: none).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    k: &Launch,
    stream: &CudaStream,
    op: &Operands,
    (nrow, ntrail, w): (usize, usize, usize),
    mats: usize,
    warps: u32,
    staging: Staging,
    row_split: u32,
) -> Result<(), QrError> {
    let row_split = split_size(row_split);
    if ntrail == 0 || mats == 0 {
        return Ok(());
    }
    let vec4 = op.lda % 4 == 0 && op.a % 16 == 0 && op.src % 16 == 0;
    let warps = if warps == 4 { 4 } else { 8 };
    let depth = staging.depth.min(8);
    let mut stage = 0;
    let mut smem = 0;
    let tiles = ntrail.div_ceil(BN);
    let defs = |stage: u32| defines(vec4, warps, stage, row_split, staging.l2_hints);
    if depth > 0 && vec4 {
        let bytes = stage_bytes(warps, depth);
        let f = k.function(&SOURCE, &defs(depth), APPLY)?;
        if bytes <= k.info().smem_per_block_optin {
            super::raise_dynamic_smem(&f, bytes, APPLY)?;
            // Static shared memory comes on top: stage only if a block fits.
            let fits = f
                .occupancy_max_active_blocks_per_multiprocessor(32 * warps, bytes, None)
                .ctx("trailing_tc occupancy")?;
            if fits > 0 {
                (stage, smem) = (depth, bytes);
            }
        }
    }
    let f = k.function(&SOURCE, &defs(stage), APPLY)?;
    let blocks = tiles
        .saturating_mul(mats)
        .saturating_mul(row_split as usize);
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(blocks)?, 1, 1),
        block_dim: (32 * warps, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let int = |x| super::kernel_int(x, "trailing_tc");
    let (lda, nrow_i, ntrail_i, w_i) = (int(op.lda)?, int(nrow)?, int(ntrail)?, int(w)?);
    let (panel_col, trail_col) = (int(op.panel_col)?, int(op.trail_col)?);
    let (sa, sv, st) = (op.a_stride as i64, op.v_stride as i64, op.t_stride as i64);
    let mut b = stream.launch_builder(&f);
    b.arg(&op.a)
        .arg(&op.src)
        .arg(&sa)
        .arg(&lda)
        .arg(&op.v)
        .arg(&sv)
        .arg(&op.t)
        .arg(&st)
        .arg(&nrow_i)
        .arg(&ntrail_i)
        .arg(&w_i)
        .arg(&op.zcol)
        .arg(&panel_col)
        .arg(&trail_col)
        .arg(&op.oflow);
    // SAFETY: A2 of each of the `mats` matrices lies inside H (nrow rows of
    // lda from row p, ntrail columns right of the panel), and at the same
    // offsets inside `src` (H itself or the input, of H's shape), V and T inside the
    // workspace sized for the batch at these strides; the kernel writes only
    // A2 and (when not 0) one mark per matrix of the launch in oflow, and
    // reads V's nrow x 32 and T's 32 x 32 (README.md beside it).
    // Staged, its dynamic shared memory is `stage_bytes` of these warps
    // and this depth, within the limit just raised. With a row split the grid is `row_split` blocks per tile,
    // consecutive, and the kernel's compile-time cluster size is
    // `row_split`, so a cluster is one tile and divides the grid.
    unsafe { b.launch(cfg) }.ctx("launching trailing_tc_apply_f32")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l2_hints_only_ride_on_a_ring() {
        let hint = |stage, hints| {
            defines(true, 4, stage, 1, hints)
                .into_iter()
                .find(|(k, _)| k == "TC_L2HINT")
                .map(|(_, v)| v)
        };
        assert_eq!(hint(2, 1).as_deref(), Some("1"));
        assert_eq!(hint(2, 2).as_deref(), Some("2"));
        assert_eq!(hint(2, 7).as_deref(), Some("2"));
        // The kernel refuses hints without the ring's copies.
        assert_eq!(hint(0, 2).as_deref(), Some("0"));
        // Every define the source requires is given, in its order (the
        // module cache refuses any other list).
        let given: Vec<String> = defines(true, 8, 2, 1, 0)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(given, SOURCE.defines);
    }

    #[test]
    fn row_split_fills_the_sms_with_few_tiles_only() {
        // 8 x 2048 and 2 x 4096: one look-ahead tile per matrix.
        assert_eq!(row_split(8, 2048, 132, 8, 128), 8);
        assert_eq!(row_split(2, 4096, 132, 8, 128), 8);
        // 60 x 1024 and 40 x 352: two blocks per tile would take more
        // than half of 132 SMs.
        assert_eq!(row_split(60, 1024, 132, 8, 128), 1);
        assert_eq!(row_split(40, 352, 132, 8, 128), 1);
        assert_eq!(row_split(30, 1024, 132, 8, 128), 2);
        // Short panels keep min_rows per block.
        assert_eq!(row_split(8, 300, 132, 8, 128), 2);
        assert_eq!(row_split(8, 200, 132, 8, 128), 1);
        // Bulk updates already fill the device.
        assert_eq!(row_split(496, 2048, 132, 8, 128), 1);
        // Off, and maxima that are not powers of two.
        assert_eq!(row_split(8, 2048, 132, 0, 128), 1);
        assert_eq!(row_split(8, 2048, 132, 1, 128), 1);
        assert_eq!(row_split(8, 2048, 132, 6, 128), 4);
    }
}
