//! What one block and one device can hold: the largest whole matrix, the
//! tallest panel, whether clusters launch. The planner dispatches on these
//! limits and the GPU tests take their edge shapes from them, so both read
//! them from one place.

use crate::device::probe::DeviceInfo;
use crate::kernels::{panel, smem};

/// Static shared memory of the kernels, kept free of the dynamic allocation
/// (the panel kernel's reduction scratch and T; an upper bound checked
/// against the compiled kernel when it loads).
pub(crate) const STATIC_SMEM_RESERVE: usize = 20 * 1024;

/// Whether `device` launches thread-block clusters (compute capability 9.0
/// and later).
pub fn has_clusters(device: &DeviceInfo) -> bool {
    device.compute_capability >= (9, 0)
}

/// Largest `n` whose whole matrix fits one block's shared memory.
pub fn smem_fit_n(device: &DeviceInfo) -> usize {
    let budget = device.smem_per_block_optin.saturating_sub(1024);
    let mut n = 0;
    while smem::smem_bytes(n + 1) <= budget {
        n += 1;
    }
    n
}

/// Largest panel height (rows) one block can hold in shared memory.
pub fn panel_fit_rows(device: &DeviceInfo) -> usize {
    device
        .smem_per_block_optin
        .saturating_sub(STATIC_SMEM_RESERVE)
        / panel::ROW_BYTES
}
