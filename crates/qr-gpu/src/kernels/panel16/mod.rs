//! Launcher of the two-level panel of the `blocked` path: a 32-column
//! panel factored as two 16-column halves (`panel16_factor_f32`, one launch
//! each; the second applies the first's reflectors to its columns and
//! joins the outer T). Kernel notes: `panel16.cu`.

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use qr_core::QrError;

use super::panel::PanelBuffers;
use super::{KernelSource, grid_dim};
use crate::engine::Engine;
use crate::error::DriverContext;

const FACTOR: &str = "panel16_factor_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "panel16",
    source: concat!(include_str!("../prelude.cu"), include_str!("panel16.cu")),
    entries: &[FACTOR],
    defines: &["P16_THREADS", "P16_MIN_BLOCKS"],
};

/// Width of one half.
pub(crate) const HALF: usize = 16;

/// Bytes of dynamic shared memory per panel row (16 floats, unpadded: every
/// access reads along a row).
const ROW_BYTES: usize = HALF * std::mem::size_of::<f32>();

/// Registers allowed for five 256-thread blocks per SM (48 a thread, no
/// spills with NVRTC 13.5): five 512-row halves fit the H200's shared
/// memory, so a batch of 640 is one wave on 132 SMs.
fn min_blocks(threads: u32) -> u32 {
    (1280 / threads.max(32)).max(1)
}

/// The `-D` defines of blocks of `threads` threads.
pub(crate) fn defines(threads: u32) -> Vec<(String, String)> {
    vec![
        ("P16_THREADS".to_string(), threads.to_string()),
        (
            "P16_MIN_BLOCKS".to_string(),
            min_blocks(threads).to_string(),
        ),
    ]
}

/// Factors the 16-column half at column `p` (`sub` = 0 for the outer
/// panel's first half, 16 for its second, which first applies the first
/// half's reflectors to its columns from row `p - 16` and ends by joining
/// the outer T) of matrices `mat0..mat0 + mats`, one block of `threads`
/// (at least 256) per matrix, on `stream`: H, tau, the half's columns of
/// the outer V and its blocks of the outer T.
#[allow(clippy::too_many_arguments)]
pub(crate) fn factor(
    engine: &Engine,
    stream: &CudaStream,
    threads: u32,
    (n, p, w, sub): (usize, usize, usize, usize),
    mat0: usize,
    mats: usize,
    buf: &PanelBuffers,
) -> Result<(), QrError> {
    if threads % 32 != 0 || !(256..=1024).contains(&threads) || w == 0 || w > HALF || sub > p {
        return Err(QrError::Unsupported {
            message: format!("two-level half panel: {threads} threads, width {w}, offset {sub}"),
        });
    }
    let f = engine.function(&SOURCE, &defines(threads), FACTOR)?;
    let smem = (n - p + sub) * ROW_BYTES;
    super::raise_dynamic_smem(&f, smem, FACTOR)?;
    let cfg = LaunchConfig {
        grid_dim: (1, grid_dim(mats)?, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let (n, p, w, sub, m0) = (n as i32, p as i32, w as i32, sub as i32, mat0 as i32);
    let mut b = stream.launch_builder(&f);
    b.arg(&buf.h)
        .arg(&buf.src)
        .arg(&buf.zcol)
        .arg(&buf.v)
        .arg(&buf.t)
        .arg(&buf.tau)
        .arg(&n)
        .arg(&p)
        .arg(&w)
        .arg(&sub)
        .arg(&m0);
    // SAFETY: h and src hold batch * n * n floats, v batch * n * 32, t
    // batch * 32 * 32, tau batch * n, zcol batch ints (the workspace's
    // sizes); the blocks touch matrices mat0..mat0 + mats of the batch,
    // rows p - sub..n and columns p..p + w <= n of H, rows p - sub..n of
    // the outer V (its columns sub..sub + 16 <= 32 written), and T's blocks
    // in the first 32 x 32; the dynamic shared memory holds the n - p + sub
    // rows the kernel loads.
    unsafe { b.launch(cfg) }.ctx("launching panel16_factor_f32")?;
    Ok(())
}
