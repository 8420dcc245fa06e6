//! Launcher of the leaf panel of the `blocked` path (`Tuning::reg_panel_mma`:
//! a block alone per matrix, no fold): four leaves of 8 columns, each
//! leaf's reflectors applied to the columns right of it on the tensor cores.

use cudarc::driver::CudaStream;
use qr_core::QrError;

use super::KernelSource;
use super::panel::{NB, PanelBuffers};
use super::panelreg::{Geometry, launch_panel};
use crate::engine::Engine;

const FACTOR: &str = "panelmma_factor_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "panelmma",
    source: concat!(include_str!("../prelude.cu"), include_str!("panelmma.cu")),
    entries: &[FACTOR],
    defines: &["PMMA_WARPS", "PMMA_G"],
};

/// Most warps of a block (1024 threads).
pub(crate) const MAX_WARPS: usize = 32;

/// Whether `r` rows per warp is a layout the kernel compiles: whole groups
/// of 8 rows, warp 0 holding the 32 pivot rows.
pub(crate) fn valid_rows(r: u32) -> bool {
    r >= NB as u32 && r % 8 == 0
}

/// Warps of a block for a panel of `rows` rows at `r` rows per warp: `None`
/// past 32 warps.
pub(crate) fn warps_for_rows(rows: usize, r: u32) -> Option<usize> {
    let warps = rows.max(1).div_ceil(r.max(1) as usize);
    (warps <= MAX_WARPS).then_some(warps)
}

/// Dynamic shared memory of a block of `warps` warps at `r` rows per warp:
/// each lane's three slots of 8 columns (a float pair per group of 8 rows).
pub(crate) fn dynamic_bytes(warps: usize, r: u32) -> usize {
    warps * 3 * (r as usize / 8) * 32 * 8
}

/// Static shared memory of a block of `warps` warps, rounded up (NVRTC 13.5,
/// sm_90: 11,760 bytes at 2 warps, 17,152 at 8, 24,352 at 16, 38,752 at 32;
/// 900 a warp).
pub(crate) fn static_bytes(warps: usize) -> usize {
    10_240 + 900 * warps
}

/// Registers a thread takes beyond its leaf's rows and pivot values
/// (`PM_REGS` in panelmma.cu counts 48 for the launch bounds; NVRTC 13.5,
/// sm_90: 80 registers at 64 rows a warp and 8 warps, 64 at 32 rows).
const OVERHEAD_REGS: usize = 48;

/// Whether a panel of `rows` rows at `r` rows per warp fits the kernel on a
/// device whose blocks may opt into `smem_optin` bytes of shared memory:
/// at most 32 warps, whose registers fit one SM's 64 Ki and whose shared
/// memory fits a block.
pub(crate) fn fits(rows: usize, r: u32, smem_optin: usize) -> bool {
    valid_rows(r)
        && warps_for_rows(rows, r).is_some_and(|w| {
            w * 32 * (r as usize / 2 + OVERHEAD_REGS) <= 65_536
                && static_bytes(w) + dynamic_bytes(w, r) <= smem_optin
        })
}

/// The `-D` defines for blocks of `warps` warps at `r` rows per warp.
pub(crate) fn defines(warps: usize, r: u32) -> Vec<(String, String)> {
    vec![
        ("PMMA_WARPS".to_string(), warps.to_string()),
        ("PMMA_G".to_string(), (r / 8).to_string()),
    ]
}

/// Factors the panel at column `p` (width `w`) of matrices `mat0..mat0 +
/// mats` on `stream`, one block per matrix of `warps_for_rows(n - p, r)`
/// warps, from the module compiled for the first panel's
/// (`warps_for_rows(n, r)`: the kernel's shared arrays take that many, and
/// a block reads the warp count it runs with), so one module serves every
/// panel of a factorization.
pub(crate) fn launch(
    engine: &Engine,
    stream: &CudaStream,
    r: u32,
    (n, p, w): (usize, usize, usize),
    mat0: usize,
    mats: usize,
    buf: &PanelBuffers,
) -> Result<(), QrError> {
    let unsupported = |rows: usize| QrError::Unsupported {
        message: format!(
            "a {rows}-row panel at {r} rows per warp exceeds the leaf panel's {MAX_WARPS} warps"
        ),
    };
    let most = warps_for_rows(n, r)
        .filter(|_| valid_rows(r))
        .ok_or_else(|| unsupported(n))?;
    let warps = warps_for_rows(n - p, r).ok_or_else(|| unsupported(n - p))?;
    let f = engine.function(&SOURCE, &defines(most, r), FACTOR)?;
    let shape = Geometry {
        n,
        p,
        w,
        mat0,
        mats,
        groups: 1,
        threads: 32 * warps as u32,
        bytes: dynamic_bytes(warps, r),
    };
    // SAFETY: the buffers are sized for the whole batch by the workspace
    // (h and src: batch*n*n, zcol: batch, v: batch*n*NB, t: batch*NB*NB,
    // tau: batch*n, oflow: 0 or batch), and the dynamic shared memory holds
    // the lanes' slots as panelmma.cu lays them out (dynamic_bytes); block
    // (0, b) touches only matrix mat0 + b, which lies in the batch (mats is
    // at most the grid's y limit, as the caller splits launches), and its
    // warps hold at least n - p rows (warps_for_rows), no more warps than
    // the module's arrays take (n - p <= n). No fold: the kernel ignores
    // vprev and tprev.
    unsafe { launch_panel(stream, &f, FACTOR, &shape, buf, None) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        assert_eq!(warps_for_rows(512, 64), Some(8));
        assert_eq!(warps_for_rows(33, 32), Some(2));
        assert_eq!(warps_for_rows(0, 64), Some(1));
        assert_eq!(warps_for_rows(1025, 32), None);
        assert!(!valid_rows(24) && !valid_rows(36) && valid_rows(32) && valid_rows(64));
        // H200 (227 KiB a block): 512 rows at 64, 1024 rows at 32 and 64.
        let optin = 232_448;
        assert!(fits(512, 64, optin) && fits(1024, 32, optin) && fits(1024, 64, optin));
        // 2048 rows: too many warps at 32, too many registers at 64.
        assert!(!fits(2048, 32, optin) && !fits(2048, 64, optin));
        assert_eq!(dynamic_bytes(8, 64), 49_152);
        assert_eq!(
            defines(8, 64),
            vec![
                ("PMMA_WARPS".to_string(), "8".to_string()),
                ("PMMA_G".to_string(), "8".to_string())
            ]
        );
    }
}
