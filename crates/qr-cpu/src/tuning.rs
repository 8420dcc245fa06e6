//! Tuning knobs of the CPU backend.
//!
//! Every default below cites the table in `docs/perf/qr-cpu.md` that chose it
//! (machine, command, numbers). Tests override the knobs to push every code
//! path through small matrices.

/// Block sizes and parallel split of [`CpuBackend`](crate::CpuBackend).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Matrices of order `n <= small_n` are factored unblocked, in place and
    /// row-major, without a panel copy. Table "small-n crossover".
    pub small_n: usize,
    /// Panel width (columns per compact-WY block) of the blocked driver for
    /// orders below `wide_block_min_n`. Table "block size".
    pub block: usize,
    /// Panel width for orders of at least `wide_block_min_n`: there the
    /// trailing matrix outgrows the caches and a wider rank update moves
    /// fewer bytes per flop. Table "block size".
    pub wide_block: usize,
    /// Order from which `wide_block` is used. Table "block size".
    pub wide_block_min_n: usize,
    /// Panels wider than this are factored recursively (split in two, the
    /// left half applied to the right with matrix products); leaves of at
    /// most this many columns use the column loop. `panel_leaf >= block`
    /// means a plain column loop. Table "panel algorithm".
    pub panel_leaf: usize,
    /// Batches of at least this many matrices are spread over the rayon pool
    /// one matrix per task; smaller batches are factored one after the other
    /// with the parallelism inside each matrix. Table "parallel split".
    pub batch_parallel_min: usize,
    /// Batches whose work, `batch * n * n * columns` (columns: `n`, or `k`
    /// for `ormqr`), is below this run in order even when they have
    /// `batch_parallel_min` matrices: a call that finds the pool's workers
    /// asleep pays tens of microseconds to wake them, more than splitting
    /// a batch this small saves. Table "parallel split: small batches".
    pub batch_parallel_min_work: usize,
    /// Trailing updates with fewer than this many columns run on one thread
    /// even when the matrix is factored with inner parallelism: below it the
    /// fork-join costs more than it saves. Table "parallel split".
    pub par_update_min_cols: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        // Measured on the 2-core AMD EPYC (AVX-512) development machine,
        // 2026-12-02; tables in docs/perf/qr-cpu.md. Outside the measured
        // orders (n in 512..1024 for the wide block) the values are
        // interpolated guesses, still correct, possibly not the fastest.
        Self {
            // "small-n crossover": unblocked ties blocked at 48, loses at 64.
            small_n: 48,
            // "block size": 32 best for n <= 512 (one thread).
            block: 32,
            // "block size": 64 (or 96) best for n = 1024, 2048.
            wide_block: 64,
            wide_block_min_n: 1024,
            // "panel algorithm": leaf 8 beats 16 and the column loop.
            panel_leaf: 8,
            // "parallel split": batch-parallel wins already at 2 matrices.
            batch_parallel_min: 2,
            // "parallel split: small batches": in order wins at 20 x 32
            // (0.66M), splitting from 12 x 64 (3.1M) on; 8 x 64 is a tie.
            batch_parallel_min_work: 1 << 21,
            // "parallel split": inner-parallel updates pay off from ~128 columns.
            par_update_min_cols: 128,
        }
    }
}

impl Tuning {
    /// The panel width used for order `n`: at least one column.
    pub(crate) fn block_for(&self, n: usize) -> usize {
        let nb = if n >= self.wide_block_min_n {
            self.wide_block
        } else {
            self.block
        };
        nb.max(1)
    }

    /// Whether a batch of `batch` matrices of order `n`, each with `cols`
    /// columns to produce, is spread over a pool of `threads` one matrix
    /// per task.
    pub(crate) fn batch_parallel(
        &self,
        batch: usize,
        n: usize,
        cols: usize,
        threads: usize,
    ) -> bool {
        let work = batch
            .saturating_mul(n)
            .saturating_mul(n)
            .saturating_mul(cols);
        threads > 1
            && batch >= self.batch_parallel_min.max(2)
            && work >= self.batch_parallel_min_work
    }
}

/// Block sizes of `orgqr` and `ormqr` (forming and applying `Q`), apart from
/// [`Tuning`] so that code listing every field of a factorization tuning
/// keeps compiling. The batch split and `par_update_min_cols` are shared
/// with the factorization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QTuning {
    /// `orgqr` of order `n <= orgqr_small_n` runs unblocked (LAPACK
    /// `sorg2r`), row-major in place. Table "orgqr / ormqr: crossover".
    pub orgqr_small_n: usize,
    /// Reflectors per compact-WY block of the blocked `orgqr` below
    /// `wide_block_min_n`; the last (partial or full) block is formed
    /// unblocked. Table "orgqr / ormqr: block size".
    pub orgqr_block: usize,
    /// `ormqr` of order `n <= ormqr_small_n` applies one reflector at a
    /// time (LAPACK `sorm2r`). Table "orgqr / ormqr: crossover".
    pub ormqr_small_n: usize,
    /// Reflectors per compact-WY block of the blocked `ormqr` below
    /// `wide_block_min_n`. Table "orgqr / ormqr: block size".
    pub ormqr_block: usize,
    /// Block of both from order `wide_block_min_n` on, where the trailing
    /// matrix outgrows the caches. Table "orgqr / ormqr: block size".
    pub wide_block: usize,
    /// Order from which `wide_block` is used. Table "orgqr / ormqr: block
    /// size".
    pub wide_block_min_n: usize,
}

impl Default for QTuning {
    fn default() -> Self {
        // Measured on the 2-core development VM (then an AVX-512 Xeon),
        // 2026-12-07, under other engineers' load; tables in
        // docs/perf/qr-cpu.md, section "orgqr / ormqr". Orders between the
        // measured ones are interpolated guesses: correct, maybe not the
        // fastest.
        Self {
            // "crossover" (second table): unblocked wins at 40, blocked
            // from 48 on.
            orgqr_small_n: 40,
            // "block size": 32 best for n in 176..512.
            orgqr_block: 32,
            // "crossover": unblocked wins up to 40 and ties at 48; blocked
            // wins at 64 by 1.3 to 1.5x across the pool ("crossover,
            // batch-parallel").
            ormqr_small_n: 40,
            // "block size": 32 best for n in 176..512.
            ormqr_block: 32,
            // "block size": 64 (or 128) best at 1024 and 2048.
            wide_block: 64,
            wide_block_min_n: 1024,
        }
    }
}

impl QTuning {
    /// The `orgqr` block for order `n`: at least one reflector.
    pub(crate) fn orgqr_block_for(&self, n: usize) -> usize {
        self.block_for(n, self.orgqr_block)
    }

    /// The `ormqr` block for order `n`: at least one reflector.
    pub(crate) fn ormqr_block_for(&self, n: usize) -> usize {
        self.block_for(n, self.ormqr_block)
    }

    fn block_for(&self, n: usize, narrow: usize) -> usize {
        let nb = if n >= self.wide_block_min_n {
            self.wide_block
        } else {
            narrow
        };
        nb.max(1)
    }
}
