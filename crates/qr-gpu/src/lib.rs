//! The CUDA engine of qr-rs: batched Householder QR in LAPACK's `geqrf` form
//! (see `qr_core` for the convention) on NVIDIA GPUs.
//!
//! - [`probe`] finds a device without panicking when no CUDA library is
//!   present (cudarc loads everything dynamically, so this crate builds and
//!   its CPU-side tests run anywhere).
//! - [`GpuBackend`] is the host [`qr_core::Backend`] and the device-resident
//!   API ([`GpuBackend::geqrf_device`]) that its `bench` times with CUDA events;
//!   [`GpuBackend::geqrf_raw`] and its twins run on buffers and a stream that
//!   the caller owns (a framework's tensors, on its current stream).
//! - `orgqr`, `ormqr` and `qr` form every 32-column block's V and T at once
//!   from `(H, tau)`, then apply the blocks with the tensor-core update's
//!   arithmetic, each 32-column tile of the result held on chip while it
//!   takes every block, or one update per block over the whole result
//!   ([`GpuBackend::orgqr_device`], [`GpuBackend::ormqr_device`],
//!   [`GpuBackend::qr_device`]; [`GpuBackend::describe_op`] says what runs).
//! - A [`Plan`] names the [`Strategy`] chosen for a shape from the device's
//!   properties ([`plan`], thresholds in [`Tuning`]); it prints and can be forced.
//! - Kernels are `.cu` sources next to their launchers, compiled by NVRTC for
//!   the device's own architecture, header-free; [`compile_plans`] compiles
//!   plans' kernels for any architecture without a device.
//! - [`peers`] wraps cuSOLVER and cuBLAS's batched QR for comparison.
//!
//! Strategies: `smem` (whole matrix in one block's shared memory,
//! unblocked); `blocked` (32-column compact-WY panels, one block per
//! matrix, the panel in registers or in shared memory, and one fused
//! trailing update per panel on tensor cores at float32 accuracy, tf32
//! 3-pass split, or through cuBLAS SGEMM where the device lacks tf32
//! `mma.sync`); `cluster` (few large matrices: each panel's rows split
//! over a thread-block cluster that meets in distributed shared memory);
//! and `large` (the rows split over co-resident blocks that meet through
//! global memory). Panels and small matrices are scaled by a power of two
//! before their norms, which are redone in double where they are tiny, so
//! inputs anywhere in the float32 normal range factor.

#![warn(missing_docs)]

// Layers, each using only those below it: compile (NVRTC, module and PTX
// caches); device (description, launch context, buffers); kernels (each
// family's specs and launcher); plan (the planner, and the modules a plan
// compiles); factor (the engine's streams and lanes, the panel loop, checks,
// graphs, the Q operations); backend and peers (the public API).
mod backend;
mod bench;
mod compile;
mod device;
mod error;
mod factor;
#[cfg(test)]
mod golden;
mod kernels;
pub mod peers;
mod plan;
mod tuning;

pub use backend::{
    DeviceFactorization, ExternalStream, GpuBackend, Planner, RAW_ALIGN, RawBuffer, RawFactors,
};
pub use device::probe::{DeviceInfo, probe, probe_device};
pub use error::GpuError;
pub use plan::modules::compile_plans;
pub use plan::{
    Blocked, Meeting, Panel, Plan, PlanEdit, Route, Schedule, SmemGeometry, Strategy, TensorUpdate,
    Update, panel_fit_rows, plan, smem_fit_n,
};
pub use tuning::Tuning;

/// cudarc, re-exported so that callers of the device-resident API name the
/// same buffer and stream types.
pub use cudarc;
