//! The `smem` strategy's block shape and kernel for one matrix order: kept
//! apart from the strategy choice, which only needs the layout's result.

use qr_core::Shape;

use crate::device::probe::DeviceInfo;
use crate::kernels::smem::{self, Geometry};
use crate::tuning::Tuning;

/// The `smem` kernel's layout for `shape` (order at most `smem_fit_n`): the
/// warp kernel for orders it holds in batches of at least
/// `tuning.smem_warp_min_batch_per_sm` matrices an SM, the register kernel while
/// its rows per thread stay within `tuning.smem_register_max_rows`, else
/// the matrix in shared memory, with the one-barrier kernel's
/// conflict-free padding where it fits.
pub(super) fn smem_layout(shape: Shape, device: &DeviceInfo, tuning: &Tuning) -> Geometry {
    let n = shape.n();
    let many = tuning.smem_warp_min_batch_per_sm.is_some_and(|per_sm| {
        shape.batch() as u64 >= u64::from(per_sm) * u64::from(device.sm_count)
    });
    if n <= smem::WARP_MAX_N && many {
        return Geometry {
            tpc: 1,
            threads: 32,
            rows: 0,
            lda: 0,
            warp: true,
        };
    }
    let tpc = tuning.smem_tpc_for(n);
    let mut l = Geometry {
        tpc,
        threads: (n.max(1) * tpc as usize).next_multiple_of(32).min(1024) as u32,
        rows: 0,
        lda: 0,
        warp: false,
    };
    if let Some((rows, threads)) = smem_registers(n, tpc)
        && rows <= tuning.smem_register_max_rows
    {
        (l.rows, l.threads) = (rows, threads);
    } else {
        let padded = smem::padded_lda(n, tpc);
        let fits =
            smem::matrix_bytes(n, padded) <= device.smem_per_block_optin.saturating_sub(1024);
        l.lda = if fits { padded } else { n | 1 } as u32;
    }
    l
}

/// Rows per thread and block size of the register `smem` kernel for order
/// `n` at `tpc` threads per column: one column per group of threads, so the
/// block has n * tpc threads, each holding ceil(n / tpc) rows (rounded up to
/// a multiple of 4, to bound the compiled variants); `None` when the block
/// does not fit the register file.
pub(super) fn smem_registers(n: usize, tpc: u32) -> Option<(u32, u32)> {
    let tpc = tpc.max(1) as usize;
    let rows = n.max(1).div_ceil(tpc).next_multiple_of(4) as u32;
    let threads = (n.max(1) * tpc).next_multiple_of(32);
    (threads <= smem::register_threads(rows) as usize).then_some((rows, threads as u32))
}
