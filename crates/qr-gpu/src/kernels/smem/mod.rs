//! Launcher of the whole-matrix shared-memory kernel (strategy `smem`).

use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use qr_core::QrError;

use super::{KernelSource, grid_dim};
use crate::engine::Engine;
use crate::error::DriverContext;
use crate::plan::Plan;

const HOUSEHOLDER: &str = "smem_householder_f32";
const ONE_BARRIER: &str = "smem_onebarrier_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "smem",
    source: concat!(include_str!("../prelude.cu"), include_str!("smem.cu")),
    entries: &[HOUSEHOLDER, ONE_BARRIER],
    defines: &["SMEM_TPC"],
};

/// Dynamic shared memory for one `n x n` matrix with the odd leading
/// dimension, and the one-barrier kernel's two pivot columns and two rows
/// of sums (the three-barrier kernel leaves them unused).
pub(crate) fn smem_bytes(n: usize) -> usize {
    (n * (n | 1) + 4 * n) * std::mem::size_of::<f32>()
}

/// The `-D` defines of this family for `tpc` threads per column.
pub(crate) fn defines(tpc: u32) -> Vec<(String, String)> {
    vec![("SMEM_TPC".to_string(), tpc.to_string())]
}

/// Factors every matrix of `a` into `h`, `tau` and `info` (device
/// pointers): the kernel flags and NaN-fills non-finite inputs and overflowed
/// outputs itself, so no batch-wide helper runs beside it.
pub(crate) fn launch(
    engine: &Engine,
    plan: &Plan,
    a: u64,
    h: u64,
    tau: u64,
    info: u64,
) -> Result<(), QrError> {
    let (shape, tpc, threads) = (plan.shape, plan.tpc, plan.threads);
    let entry = if plan.one_barrier {
        ONE_BARRIER
    } else {
        HOUSEHOLDER
    };
    let f = engine.function(&SOURCE, &defines(tpc), entry)?;
    let smem = smem_bytes(shape.n());
    f.set_attribute(
        FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        smem as i32,
    )
    .ctx(&format!("raising the shared-memory limit of {entry}"))?;
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(shape.batch())?, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let n = shape.n() as i32;
    let mut b = engine.stream().launch_builder(&f);
    b.arg(&a).arg(&h).arg(&tau).arg(&info).arg(&n);
    // SAFETY: `a` and `h` hold batch * n * n floats, `tau` batch * n and
    // `info` batch ints; the
    // block size is a multiple of `tpc` and the dynamic shared memory is the
    // matrix's padded size, as the kernel expects.
    unsafe { b.launch(cfg) }.ctx(&format!("launching {entry}"))?;
    Ok(())
}
