//! Launcher of the column-per-lane register panel of the `blocked` path
//! (`Tuning::reg_panel_columns`: a block alone per matrix, no fold).

use cudarc::driver::CudaStream;
use qr_core::QrError;

use super::KernelSource;
use super::panel::{NB, PanelBuffers};
use super::panelreg::{Geometry, launch_panel};
use crate::engine::Engine;

const FACTOR: &str = "panelcol_factor_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "panelcol",
    source: concat!(include_str!("../prelude.cu"), include_str!("panelcol.cu")),
    entries: &[FACTOR],
    defines: &["PCOL_WARPS", "PCOL_R", "PCOL_FOLD", "PCOL_TOP_ROLLED"],
};

/// Most warps of a block (1024 threads).
pub(crate) const MAX_WARPS: usize = 32;

/// Whether `r` rows per lane is a layout the kernel compiles (a positive
/// multiple of 4).
pub(crate) fn valid_rows(r: u32) -> bool {
    r >= 4 && r % 4 == 0
}

/// Warps of a block for a panel of `rows` rows at `r` rows per lane of
/// warps 1 and up (warp 0 holds the first 32; with `rolled` every warp
/// holds max(r, 32)), rounded up to an even count for the fold (which maps
/// its W pass onto groups of 64 threads): `None` past 32 warps.
pub(crate) fn warps_for_rows(rows: usize, r: u32, fold: bool, rolled: bool) -> Option<usize> {
    let warps = if rolled {
        rows.max(1).div_ceil(r.max(NB as u32) as usize)
    } else {
        1 + rows.saturating_sub(NB).div_ceil(r.max(1) as usize)
    };
    let warps = if fold {
        warps.next_multiple_of(2)
    } else {
        warps
    };
    (warps <= MAX_WARPS).then_some(warps)
}

/// Registers a thread takes beyond its rows (`PCOL_REGS` in panelcol.cu
/// counts 56 for the launch bounds; NVRTC 13.5, sm_90, unbounded: 164
/// registers at 64 rows, 168 at 96).
const OVERHEAD_REGS: usize = 64;

/// Whether a panel of `rows` rows at `r` rows per lane (`fold`, `rolled` as
/// in `warps_for_rows`) fits the kernel:
/// at most 32 warps, whose rows and overhead fit one SM's 64 Ki registers
/// (NVRTC 13.5: 1024 rows at 32, 48 or 64 rows per lane spill 1.3 to 1.6
/// KB a thread; at 96, 168 bytes).
pub(crate) fn fits(rows: usize, r: u32, fold: bool, rolled: bool) -> bool {
    valid_rows(r)
        && warps_for_rows(rows, r, fold, rolled)
            .is_some_and(|w| w * 32 * (r.max(32) as usize + OVERHEAD_REGS) <= 65_536)
}

/// The `-D` defines for blocks of `warps` warps at `r` rows per lane, with
/// the fold compiled in where `fold`, and warp 0's steps in a rolled loop
/// where `rolled`.
pub(crate) fn defines(warps: usize, r: u32, fold: bool, rolled: bool) -> Vec<(String, String)> {
    vec![
        ("PCOL_WARPS".to_string(), warps.to_string()),
        ("PCOL_R".to_string(), r.to_string()),
        ("PCOL_FOLD".to_string(), u8::from(fold).to_string()),
        ("PCOL_TOP_ROLLED".to_string(), u8::from(rolled).to_string()),
    ]
}

/// Factors the panel at column `p` (width `w`) of matrices `mat0..mat0 +
/// mats` on `stream`, one block per matrix of `warps_for_rows(n - p, r,
/// fold)` warps. With `fold` (a plan that folds) and `prev` (the previous
/// panel's V and T buffers), the previous panel's reflectors are applied to
/// these columns first; `rolled`: warp 0's steps in a rolled loop
/// (`PCOL_TOP_ROLLED`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    engine: &Engine,
    stream: &CudaStream,
    r: u32,
    (n, p, w): (usize, usize, usize),
    mat0: usize,
    mats: usize,
    buf: &PanelBuffers,
    (fold, rolled): (bool, bool),
    prev: Option<(u64, u64)>,
) -> Result<(), QrError> {
    let rows = n - p;
    let warps = warps_for_rows(rows, r, fold, rolled)
        .filter(|_| valid_rows(r))
        .ok_or_else(|| QrError::Unsupported {
            message: format!(
                "a {rows}-row panel at {r} rows per lane exceeds the column panel's {MAX_WARPS} warps"
            ),
        })?;
    let threads = 32 * warps as u32;
    let f = engine.function(&SOURCE, &defines(warps, r, fold, rolled), FACTOR)?;
    let prev = super::panelreg::fold_source(fold, p, prev);
    let bytes = if prev.is_some() {
        super::panelreg::fold_bytes(threads, rows)
    } else {
        0
    };
    let shape = Geometry {
        n,
        p,
        w,
        mat0,
        mats,
        groups: 1,
        threads,
        bytes,
    };
    // SAFETY: the buffers are sized for the whole batch by the workspace
    // (h and src: batch*n*n, zcol: batch, v: batch*n*NB, t: batch*NB*NB,
    // tau: batch*n, oflow: 0 or batch; a fold's vprev and tprev are buffers
    // of v's and t's sizes, and the dynamic shared memory holds the fold's
    // rows and scratch as qr_fold_apply expects); block (0, b) touches only
    // matrix mat0 + b, which lies in the batch (mats is at most the grid's
    // y limit, as the caller splits launches), and its warps hold at least
    // n - p rows (warps_for_rows).
    unsafe { launch_panel(stream, &f, FACTOR, &shape, buf, prev) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_hold_their_rows_in_at_most_32_warps() {
        assert_eq!(warps_for_rows(512, 64, false, false), Some(9));
        assert_eq!(warps_for_rows(512, 64, true, false), Some(10));
        assert_eq!(warps_for_rows(480, 64, false, false), Some(8));
        assert_eq!(warps_for_rows(32, 64, false, false), Some(1));
        assert_eq!(warps_for_rows(32, 64, true, false), Some(2));
        assert_eq!(warps_for_rows(1, 32, false, false), Some(1));
        assert_eq!(warps_for_rows(1024, 32, false, false), Some(32));
        assert_eq!(warps_for_rows(1025, 32, false, false), None);
        assert_eq!(warps_for_rows(512, 64, false, true), Some(8));
        assert_eq!(warps_for_rows(512, 4, false, true), Some(16));
        for rows in 1..=1024usize {
            for r in [4u32, 32, 44, 64] {
                for fold in [false, true] {
                    for rolled in [false, true] {
                        if let Some(wp) = warps_for_rows(rows, r, fold, rolled) {
                            let held = if rolled {
                                wp * r.max(32) as usize
                            } else {
                                NB + (wp - 1) * r as usize
                            };
                            assert!(held >= rows && wp <= MAX_WARPS);
                            assert!(!fold || wp % 2 == 0);
                        }
                    }
                }
            }
        }
        assert!(valid_rows(64) && !valid_rows(0) && !valid_rows(30));
        assert!(fits(512, 64, false, false) && fits(512, 32, false, false));
        assert!(fits(1024, 96, false, false) && fits(512, 64, false, true));
        assert!(!fits(1024, 64, false, false) && !fits(1024, 32, false, false));
        assert!(!fits(512, 30, false, false));
    }
}
