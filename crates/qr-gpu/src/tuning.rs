//! Tuning constants of the planner. Each field's section in `docs/PERF.md`
//! gives its table, device and rule outside the measured range; the tables
//! themselves are in `docs/history/qr-gpu-sessions.md`, measured by
//! `bench_suite --sweep` on an H200 unless a comment says otherwise.
//! Dispatch reads device capabilities (SM count, shared memory opt-in,
//! compute capability), never a device name.

/// Knobs of the planner, with [`Default`] holding the measured choices; tests
/// and experiments override fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// `smem` strategy: threads per column for `n` below 64, below 128 and
    /// above. Table "smem threads per column" (H200: 8 best at n = 32, 4 at
    /// n = 176; 64..128 takes 4, not measured separately).
    pub smem_tpc: [u32; 3],
    /// Largest `n` dispatched to `smem` even when a larger matrix would fit
    /// one block's shared memory; larger orders take `cluster` (few
    /// matrices) or `blocked`. 160: at batch 40 on the H200 the one-barrier
    /// kernel won at n = 96 to 160 (160: 336.9 vs cluster 345.8 us) and lost
    /// from 176 on (411.7 vs 392.9 us); docs/history/qr-gpu-sessions.md, table "smem
    /// crossover, one barrier".
    pub smem_max_n: usize,
    /// `smem` strategy: most rows per thread of the one-barrier kernel that
    /// keeps every column in its threads' registers; orders needing more
    /// take the shared-memory kernels (0: never). 8: on the H200 it won at
    /// n = 32 (4 or 8 rows: 29.9 vs 34.8 us) and lost from 12 rows on
    /// (n = 96: 162.5 vs 149.8 us; 2.1x slower at n = 176), table "smem
    /// registers" (docs/history/qr-gpu-sessions.md).
    pub smem_register_max_rows: u32,
    /// `smem` strategy: orders up to 32 (the kernel's limit) are factored
    /// by the kernel with one warp per matrix, column c in lane c's
    /// registers and no block barrier (`smem_warp_f32`), in batches of at
    /// least this many matrices per SM; `None`: never. 4: on the H100
    /// (docs/PERF.md, `smem_warp_min_batch_per_sm`) at n = 32 it lost at
    /// 20 and 132 matrices (30.1 against 27.1 us, 30.4 against 27.6) and won
    /// from 528 on (31.2 against 40.1; 357.1 against 1217.8 at 20000).
    pub smem_warp_min_batch_per_sm: Option<u32>,
    /// Block size of the shared-memory panel kernel on the `blocked` path
    /// (panels taller than the register kernel holds). Table "panel
    /// block size" (H200); 256 threads keep three 512-row panels per SM.
    pub blocked_panel_threads: u32,
    /// Block size of the panel kernel on the `large` path (rows split over
    /// several blocks). Table "panel block size".
    pub large_panel_threads: u32,
    /// Fewest and most panel rows one block of the `large` path holds. The
    /// planner splits rows so that the batch's blocks roughly fill the SMs,
    /// within these bounds. Table "large split" (H200).
    pub large_rows_per_block: (usize, usize),
    /// Block size of the panel kernel on the `cluster` path. Table "cluster
    /// panel" (H200).
    pub cluster_panel_threads: u32,
    /// Most blocks in a panel cluster (8 is the portable limit). Table
    /// "cluster panel".
    pub cluster_max_blocks: u32,
    /// Fewest panel rows per cluster block: below it the cluster barrier
    /// costs more than the shorter row chain saves. Table "cluster panel".
    pub cluster_min_rows: usize,
    /// Cluster blocks per SM the planner aims for: the cluster size is at
    /// most `sm_count * this / batch`. Table "cluster panel".
    pub cluster_blocks_per_sm: u32,
    /// Trailing update on the fused tensor-core kernel where the device has
    /// tf32 `mma.sync` (sm_80+). Table "trailing update" and
    /// docs/perf/trailing_tc.md.
    pub tensor_trailing: bool,
    /// `blocked` and `cluster` paths: panel rows each thread of the
    /// register-resident panel kernel holds (0: the shared-memory panel
    /// everywhere). Tall panels of a block alone (`blocked_tall_panel_rows`
    /// and up, at most one matrix per SM) take `blocked_tall_panel_threads`
    /// and as many rows per thread as that needs, instead of the fold;
    /// shorter folding plans keep the folding shared-memory panel. 2: on
    /// the H200 (docs/history/qr-gpu-sessions.md, table "register panel"),
    /// shared-memory panel against 1 / 2 rows per thread, us: 640 x 512
    /// 5483.5 / 5848.8 / 5226.4, 60 x 1024 4138.7 / 3943.5 / 3816.7,
    /// 8 x 2048 (cluster) 6650.9 / 6705.8 / 6481.8, 2 x 4096 (cluster)
    /// 16198.8 / 15875.6 / 14341.1, 40 x 352 592.7 / 577.5 / 605.1 (hence
    /// one row per thread for the tall panels), 40 x 176 226.4 / 235.3 /
    /// 267.3 (hence the fold below them). Earlier contrary figures were
    /// measured with the butterfly's values in local memory.
    pub reg_panel_rows_per_thread: u32,
    /// Largest block of the register-resident panel kernel; taller panels
    /// take the shared-memory kernel. Table "register panel".
    pub reg_panel_max_threads: u32,
    /// `blocked` path with at most one matrix per SM: the fewest threads
    /// of a register panel block when later, shorter panels shrink the
    /// block (a multiple of 64, at most the plan's block; larger batches
    /// and clusters take 64). A block alone on its SM is latency-bound,
    /// and its last panels ran faster on more warps than they have rows
    /// for. H200 (docs/history/qr-gpu-sessions.md, table "register panel
    /// alone min threads", `bench_suite --sweep --only "alone min
    /// threads"`), 64 / 128 / 256, us: 40 x 352 586.6 / 569.1 / 562.2,
    /// 60 x 1024 3845.7 / 3797.1 / 3788.1; the cluster plans, not given
    /// it: 8 x 2048 6355.8 / 6306.8 / 6281.8, 2 x 4096 13787.7 / 13720.3 /
    /// 14026.1.
    pub reg_panel_alone_min_threads: u32,
    /// `blocked` path, one-barrier loop with float32 reflectors: the row
    /// loop loads each next group of four rows before updating the current
    /// one (`PANEL_PIPE`) when at most this many panel threads share an SM
    /// (a block of at most this many threads per matrix, at most one
    /// matrix per SM). H200 (docs/history/qr-gpu-sessions.md, table "panel
    /// pipeline"): 40 x 176 at 256 threads 249.2 -> 236.4 us, but 40 x 352
    /// at 512 threads 641.6 -> 658.7 and 640 x 512 (three 256-thread blocks
    /// per SM) 6016 -> 6196 us, where more warps hide the latency already
    /// and the extra instructions cost.
    pub panel_pipeline_max_threads: u32,
    /// `blocked` path with at most one matrix per SM (one-barrier panels on
    /// the tensor-core update): each panel but the first applies the
    /// previous panel's reflectors to its own columns in its prologue
    /// (float32 FMAs), instead of a tensor-core launch of that update on the
    /// chain between the two panels. Shared-memory panels only: tall
    /// panels take the register panel instead (`reg_panel_rows_per_thread`).
    /// The smallest order that folds; `None`: none.
    pub panel_fold_min_n: Option<usize>,
    /// `blocked` path with at most one matrix per SM: block size of the
    /// panel kernel for panels of `blocked_tall_panel_rows` rows or more
    /// (their row chains are long and no other block shares the SM).
    /// Table "few matrices" : 60 x 1024 at 256 / 384 / 512 / 768
    /// threads 6636 / 6263 / 5157 / 5440 us.
    pub blocked_tall_panel_threads: u32,
    /// See `blocked_tall_panel_threads`: 40 x 176 and 40 x 240 were fastest
    /// at 256-384 threads, 512 lost 6% and 5% there; with float32 reflectors
    /// (table "few matrices") 40 x 352 at 256 / 384 / 512 threads
    /// took 827.7 / 772.8 / 746.8 us and 40 x 240 460.3 / 444.2 / 452.2, so
    /// the line lies between 240 and 352 rows.
    pub blocked_tall_panel_rows: usize,
    /// Few matrices whose panel fits one block: a cluster of fewer blocks
    /// loses to the one-barrier panel of a block alone (table "few
    /// matrices": 40 x 176 cluster of 2 390.8 us vs block alone
    /// 360.0, 40 x 240 569.0 vs 547.5; with float32 reflectors:
    /// 40 x 352, cluster of 4, 816.3 vs 746.8 at 512 threads, 40 x 512, 4,
    /// 1352.8 vs 1304.4, while 20 x 1024, 8, 3169.0 vs 3714.1).
    pub cluster_min_blocks: u32,
    /// Few matrices whose panel fits one block: a cluster whose blocks hold
    /// this many panel rows or more loses to the block alone (table "few
    /// matrices": 60 x 1024, 4 blocks of 256 rows, 5390 us vs 5157 at 512
    /// threads; 40 x 512, 4 of 128, 1439 vs 1520; 40 x 352, 4 of 88, 888
    /// vs 900).
    pub cluster_max_block_rows: usize,
    /// Blocked paths that read the input out of place: the scan for
    /// non-finite entries and zero columns runs on a low-priority stream
    /// beside the first panel and update (which need neither), the second
    /// step waiting for it; and the overflow check of the rows and columns
    /// final at mid-factorization runs there beside the second half, so
    /// that only the bottom-right quarter is checked after the last step.
    /// Only for batches of at least this many times the L2 cache's bytes
    /// (`None`: never): on the H200 (run s14-run5) 640 x 512 went
    /// 5569.7 -> 5524.1 us with it, while 60 x 1024 (240 MiB), with the
    /// CUDA graph it forgoes, was faster without it (3993.3 against
    /// 4100.0 us), as were 8 x 2048 and 2 x 4096 (docs/history/qr-gpu-sessions.md,
    /// table "checks aside"): a short scan gains less
    /// than the stream joins, the low-priority blocks in the panels' way
    /// and the lost graph cost. 6: between 240 MiB (4 L2s, slower aside)
    /// and 640 MiB (10.7 L2s, faster).
    pub checks_aside_min_l2: Option<u32>,
    /// Tensor-core update: 4-warp blocks when the first trailing update
    /// has at least this many waves of 8-warp blocks (its blocks over the
    /// SMs' resident 8-warp blocks), else 8 (0: 4 always; `u32::MAX`: 8
    /// always). Blocks per SM scale so that a thread keeps 128 registers
    /// (8: two blocks, 4: four), the same 16 warps per SM either way. On
    /// the H200, 4 warps were 3.9%
    /// faster at 640 x 512 (36 waves) and 1-12% slower at 60 x 1024 (7),
    /// 8 x 2048 (1.9) and 2 x 4096 (1): docs/history/qr-gpu-sessions.md, table "tensor
    /// warps"; 16 lies between 7 and 36 (their geometric middle).
    pub tensor_warps4_min_waves: u32,
    /// Tensor-core update: depth of the cp.async pipeline that passes each
    /// warp's 16-row slabs of V and A2 through a ring of this many slots in
    /// shared memory, so A2 is read from global memory in both passes as
    /// unstaged, but every load is a cp.async issued depth - 1 slabs ahead,
    /// at 4 KiB of shared memory per slot and warp; 0 streams without
    /// shared memory (as do orders whose rows are not 16-byte aligned and
    /// blocks whose ring does not fit an SM). Same bits every way. 2, against
    /// unstaged: 640 x 512 6690.0 -> 6175.9 us, 8 x 2048 7897.4 -> 7498.5,
    /// 60 x 1024 4846.1 -> 4819.3, 40 x 176 and 40 x 352 within 0.5% (H200,
    /// docs/history/qr-gpu-sessions.md, table "tensor stage"); depths 3 and
    /// 4 were slower (fewer blocks per SM).
    pub tensor_stage_depth: u32,
    /// Tensor-core update on devices with clusters: a launch of few tiles
    /// (the look-ahead update of a few-matrix plan: one tile per matrix)
    /// splits each tile's rows over a cluster of up to this many blocks,
    /// which add their W partials in block order through distributed
    /// shared memory (`trailing_tc::row_split`, which also keeps such a
    /// launch to half the SMs); 0 or 1: off. 8: on the H200
    /// (docs/history/qr-gpu-sessions.md, table "tensor row split"), off /
    /// 8: 2 x 4096 12719.7 / 9991.1 us, 8 x 2048 5691.0 / 5579.3.
    pub tensor_row_split: u32,
    /// `blocked` path: batches of at least `batch_lanes_min_batch_per_sm`
    /// matrices per SM (and not run as a graph) are cut into this many
    /// groups, each factored on its own lane of streams (at most
    /// `plan::MAX_LANES`), so that one group's panels need not wait for
    /// the whole batch's previous update; 0 or 1: one group. 2 on the H200
    /// (docs/history/qr-gpu-sessions.md, table "batch lanes"), 1 / 2 / 3 /
    /// 4 lanes: 640 x 512 dense 5154.6 / 5068.2 / 5225.6 / 5410.3 us,
    /// rankdef 4036.7 / 3891.2 / 4068.8 / 4080.3.
    pub batch_lanes: u32,
    /// Fewest matrices per SM for `batch_lanes`: 2, between the few-matrix
    /// plans that lost with lanes (40 x 352, 0.3 an SM: 546.8 against
    /// 605.0 us, H200 table "lanes without graphs") and 640 x 512 (4.8).
    pub batch_lanes_min_batch_per_sm: u32,
    /// L2 eviction priorities of the staged tensor-core update
    /// (`tensor_stage_depth` > 0): 0 none; 1 A2's second read (the update pass)
    /// and its stores evict first, except the launch's first tile, whose
    /// columns the chain reads next (the other tiles are read by the next
    /// step's bulk update, after the whole batch has streamed through L2);
    /// 2 also A2's first read (the W pass) evicts last. Why: a block reads
    /// its tile twice and every resident block streams its own tile in
    /// between; the bulk update at 640 x 512 hit L2 on half its lookups and
    /// moved 1.77 GB of DRAM against 1.22 GB for A2 read once and written
    /// once, plus V (ncu, run s14-run8). Only for batches of at least two
    /// L2s (the planner's `L2_HINTS_MIN_L2`). The policy rides on the copies' and
    /// stores' descriptors: no extra instruction per access (NVRTC 13.5
    /// SASS). 1, with the staged update's pass reversed (now plain code,
    /// trailing_tc.cu): 3 to 4% faster on every large benchmark case on the
    /// H100 (docs/PERF.md, `tensor_l2_hints`), GPU tests passing.
    pub tensor_l2_hints: u32,
    /// `orgqr` / `ormqr`: the largest cluster of blocks that may hold one
    /// 32-column tile of the result on chip (`factor/q.rs`, `OnChip`: the fewest
    /// blocks whose shared memory holds the tile); orders needing more
    /// take one tensor-core update per block over the whole result; 0:
    /// never on chip. 8, the portable cluster limit: on the H100 orgqr's
    /// tile on chip won at every benchmark order but 4096 (a tie, clusters
    /// of 4; docs/PERF.md, "q_max_cluster").
    pub q_max_cluster: u32,
    /// `ormqr`: the largest order whose blocks are applied on chip (as
    /// `q_max_cluster` allows); larger orders take one tensor-core update
    /// per block. 352: on the H100 the tile on chip won at n = 32 to 352
    /// and lost from 512 on (7.75 against 7.60 ms at 640 x 512, 20.8
    /// against 13.9 at 2 x 4096; docs/PERF.md, "q_ormqr_on_chip_max_n").
    pub q_ormqr_on_chip_max_n: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            smem_tpc: [8, 4, 4],
            smem_max_n: 160,
            smem_register_max_rows: 8,
            smem_warp_min_batch_per_sm: Some(4),
            blocked_panel_threads: 256,
            large_panel_threads: 256,
            large_rows_per_block: (64, 1024),
            cluster_panel_threads: 256,
            cluster_max_blocks: 8,
            cluster_min_rows: 64,
            cluster_blocks_per_sm: 2,
            tensor_trailing: true,
            reg_panel_rows_per_thread: 2,
            reg_panel_max_threads: 512,
            reg_panel_alone_min_threads: 256,
            panel_pipeline_max_threads: 256,
            panel_fold_min_n: Some(0),
            blocked_tall_panel_threads: 512,
            blocked_tall_panel_rows: 320,
            cluster_min_blocks: 8,
            cluster_max_block_rows: 192,
            checks_aside_min_l2: Some(6),
            tensor_warps4_min_waves: 16,
            tensor_stage_depth: 2,
            tensor_row_split: 8,
            batch_lanes: 2,
            batch_lanes_min_batch_per_sm: 2,
            tensor_l2_hints: 1,
            q_max_cluster: 8,
            q_ormqr_on_chip_max_n: 352,
        }
    }
}

impl Tuning {
    /// Block size of the register-resident panel kernel for order `n`, or
    /// `None` when its panels do not fit (or it is switched off): the
    /// smallest power of two of at least 32 threads holding `n` rows, so
    /// that few variants get compiled.
    pub fn reg_panel_threads_for(&self, n: usize) -> Option<u32> {
        self.reg_panel_for(n, false).map(|(threads, _)| threads)
    }

    /// Block size and rows per thread of the register panel at order `n`
    /// (`n` rows per block), or `None` for the shared-memory panel (register
    /// panel off, more than four rows per thread, or more than a block's
    /// registers). `alone`: a block alone on its SM, sized like the tall
    /// panels: `blocked_tall_panel_threads` threads (rounded up to a power
    /// of two) and as many rows per thread as that needs; otherwise
    /// `reg_panel_rows_per_thread` rows each.
    pub fn reg_panel_for(&self, n: usize, alone: bool) -> Option<(u32, u32)> {
        if self.reg_panel_rows_per_thread == 0 {
            return None;
        }
        let rpt = if alone {
            n.div_ceil(self.blocked_tall_panel_threads.max(32) as usize) as u32
        } else {
            self.reg_panel_rows_per_thread
        };
        let threads = n.div_ceil(rpt.max(1) as usize).max(32).next_power_of_two();
        // The kernel budgets 32 registers per row held plus 64 (its
        // PREG_REGS), and a block has 64 Ki registers on every architecture
        // from sm_50 on: rows past that stay in shared memory.
        let fits = threads * (32 * rpt as usize + 64) <= 65536;
        (rpt <= 4 && fits && threads <= self.reg_panel_max_threads.min(1024) as usize)
            .then_some((threads as u32, rpt))
    }

    /// Threads per column of the `smem` kernel for order `n`.
    pub fn smem_tpc_for(&self, n: usize) -> u32 {
        match n {
            0..64 => self.smem_tpc[0],
            64..128 => self.smem_tpc[1],
            _ => self.smem_tpc[2],
        }
    }
}
