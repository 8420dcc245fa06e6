//! Launchers of the two-level panel of the `blocked` path: a 32-column
//! panel factored as two 16-column halves (`panel16_factor_f32`), the
//! first half's reflectors applied to the second half's columns by the
//! tensor-core update in between, and the outer T joined from the halves'
//! (`panel16_join_f32`). Kernel notes: `panel16.cu`.

use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use qr_core::QrError;

use super::panel::PanelBuffers;
use super::{KernelSource, grid_dim};
use crate::engine::Engine;
use crate::error::DriverContext;

const FACTOR: &str = "panel16_factor_f32";
const JOIN: &str = "panel16_join_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "panel16",
    source: concat!(include_str!("../prelude.cu"), include_str!("panel16.cu")),
    entries: &[FACTOR, JOIN],
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

fn defines(threads: u32) -> Vec<(String, String)> {
    vec![
        ("P16_THREADS".to_string(), threads.to_string()),
        (
            "P16_MIN_BLOCKS".to_string(),
            min_blocks(threads).to_string(),
        ),
    ]
}

/// Factors the 16-column half at column `p` (`sub` = 0 for the outer
/// panel's first half, 16 for its second) of matrices `mat0..mat0 + mats`,
/// one block of `threads` per matrix, on `stream`: H, tau, the half's
/// columns of the outer V and its diagonal block of the outer T.
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
    if threads % 32 != 0 || !(32..=1024).contains(&threads) || w == 0 || w > HALF || sub > p {
        return Err(QrError::Unsupported {
            message: format!("two-level half panel: {threads} threads, width {w}, offset {sub}"),
        });
    }
    let f = engine.function(&SOURCE, &defines(threads), FACTOR)?;
    let smem = (n - p) * ROW_BYTES;
    f.set_attribute(
        FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        smem as i32,
    )
    .ctx("raising the shared-memory limit of panel16_factor_f32")?;
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
    // rows p..n and columns p..p + w <= n of H, rows p - sub..n of V's
    // columns sub..sub + 16 <= 32, and T's block at (sub, sub); the dynamic
    // shared memory holds the n - p rows the kernel loads.
    unsafe { b.launch(cfg) }.ctx("launching panel16_factor_f32")?;
    Ok(())
}

/// Joins the outer T of the two-level panel at column `p` (both halves
/// factored, the second of width `n - p - 16` or more) for matrices
/// `mat0..mat0 + mats`, on `stream`.
pub(crate) fn join(
    engine: &Engine,
    stream: &CudaStream,
    (n, p): (usize, usize),
    mat0: usize,
    mats: usize,
    buf: &PanelBuffers,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &defines(256), JOIN)?;
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(mats)?, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let (n, p, m0) = (n as i32, p as i32, mat0 as i32);
    let mut b = stream.launch_builder(&f);
    b.arg(&buf.v).arg(&buf.t).arg(&n).arg(&p).arg(&m0);
    // SAFETY: v holds batch * n * 32 floats and t batch * 32 * 32; the
    // blocks read rows 16..n - p of V for matrices mat0..mat0 + mats of
    // the batch and write T's upper-right 16 x 16 block of the same.
    unsafe { b.launch(cfg) }.ctx("launching panel16_join_f32")?;
    Ok(())
}
