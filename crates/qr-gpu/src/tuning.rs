//! Tuning constants of the planner, with their provenance in
//! `docs/perf/qr-gpu.md` ("Dispatch and tuning constants"; merged into
//! `docs/PERF.md`). The values are the seed's leads and device limits; the
//! H200 sweep that should confirm them (`bench_suite --sweep`) has not run. Dispatch reads device
//! capabilities (SM count, shared memory opt-in), never a device name.

/// Knobs of the planner, with [`Default`] holding the measured choices; tests
/// and experiments override fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// `smem` strategy: threads per column for `n` below 64, below 128 and
    /// above. Table "smem threads per column" (seed's B200 measurement: 4
    /// threads per column 20-29% faster from n = 168; H200 run in
    /// docs/perf/qr-gpu.md). Larger n only changes the block size.
    pub smem_tpc: [u32; 3],
    /// Largest `n` dispatched to `smem` even when a larger matrix would fit
    /// one block's shared memory. Table "dispatch"; past about 240 no H200
    /// block can hold the matrix anyway.
    pub smem_max_n: usize,
    /// Block size of the panel kernel on the `blocked` path. Table "panel
    /// block size" (H200); 256 threads keep three 512-row panels per SM.
    pub blocked_panel_threads: u32,
    /// Block size of the panel kernel on the `large` path (rows split over
    /// several blocks). Table "panel block size".
    pub large_panel_threads: u32,
    /// Fewest and most panel rows one block of the `large` path holds. The
    /// planner splits rows so that the batch's blocks roughly fill the SMs,
    /// within these bounds. Table "large split" (H200).
    pub large_rows_per_block: (usize, usize),
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            smem_tpc: [1, 2, 4],
            smem_max_n: 240,
            blocked_panel_threads: 256,
            large_panel_threads: 256,
            large_rows_per_block: (64, 1024),
        }
    }
}

impl Tuning {
    /// Threads per column of the `smem` kernel for order `n`.
    pub fn smem_tpc_for(&self, n: usize) -> u32 {
        match n {
            0..64 => self.smem_tpc[0],
            64..128 => self.smem_tpc[1],
            _ => self.smem_tpc[2],
        }
    }
}
