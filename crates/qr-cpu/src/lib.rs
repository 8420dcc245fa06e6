//! qr-cpu: the pure-Rust CPU reference backend of qr-rs.
//!
//! [`CpuBackend`] factors batches of square `f32` matrices into the exact
//! LAPACK `geqrf` form documented in [`qr_core`]: fixed-position Householder
//! reflectors (no pivoting, no rank revealing), `tau` itself (not `1/tau`),
//! `tau = 0` exactly for an exactly zero sub-column, and norms that stay
//! finite and non-zero over the whole `f32` range.
//!
//! # Algorithm
//!
//! - Small orders (`n <= Tuning::small_n`): unblocked `geqr2`, in place on
//!   the row-major output ([`kernels::geqr2_row_major`]).
//! - Larger orders: LAPACK's blocked `geqrf`. Each panel of
//!   `Tuning::block` columns is copied to a column-major scratch and
//!   factored recursively down to leaves of `Tuning::panel_leaf` columns,
//!   which are factored column by column ([`kernels::panel_factor_wy`],
//!   [`kernels::panel_factor`]); the compact-WY factor `T`
//!   ([`kernels::larft`] at the leaves, joined on the way up) then lets the trailing columns be
//!   updated with three matrix products ([`kernels::apply_block_reflector_left`])
//!   through faer's `matmul`. faer's own QR is not used: it pivots and
//!   stores `1/tau`.
//! - Parallelism (rayon): a batch of several matrices is spread over the
//!   pool one matrix per task; a lone matrix gets the pool inside its
//!   trailing updates. Scratch is allocated once per worker.
//! - `Q` from `(H, tau)` (LAPACK `sorgqr`, `sormqr`; [`orgqr`](qr_core::orgqr),
//!   [`ormqr`](qr_core::ormqr)): small orders one reflector at a time along
//!   contiguous rows; larger ones in compact-WY blocks (`T` from the same
//!   `larft`, three faer products per block). `orgqr` accumulates
//!   backward, last block first, each block touching only `Q[i.., i..]`
//!   (about `4/3 n^3`, as `sorgqr`). A lone matrix splits each block's
//!   product by columns over the pool. `qr` is `geqrf` then `orgqr`.
//!   Block sizes: [`QTuning`].
//! - A matrix holding a NaN or an infinity is not factored: its `info` is
//!   [`qr_core::Info::NON_FINITE`] and its `H` and `tau` are NaN; the rest of
//!   the batch is factored as usual. A finite matrix whose `R` does not fit
//!   `f32` is [`qr_core::Info::OVERFLOW`], NaN-filled the same way; one whose
//!   `f32` intermediates overflow while `R` fits is factored again scaled by
//!   a power of two.
//!
//! Tuning constants and their measurements: [`Tuning`] and
//! `docs/perf/qr-cpu.md`.

#![warn(missing_docs)]

mod backend;
mod blocked;
mod isa;
mod larft;
mod orgqr;
mod ormqr;
mod panel;
mod reflector;
mod tuning;
mod unblocked;
mod update;
mod vector;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_q;

pub use backend::CpuBackend;
pub use tuning::{QTuning, Tuning};

/// The building blocks of the factorization, for benchmarks and for other
/// backends that want a host reference of one step. All storage is plain
/// `f32` slices with explicit strides (faer views for the update).
pub mod kernels {
    pub use crate::larft::{larft, larft_scratch};
    pub use crate::panel::{panel_factor, panel_factor_wy, panel_factor_wy_scratch};
    pub use crate::unblocked::{geqr2_row_major, geqr2_row_major_scratch};
    pub use crate::update::{apply_block_reflector_left, apply_block_reflector_left_scratch};
}
