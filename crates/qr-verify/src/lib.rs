//! Verification for qr-rs: everything needed to say whether a backend's
//! `(H, tau)` is the `geqrf` of its input, independently of the backend.
//!
//! - [`generate`]: the `qr_v2` input distributions and LAPACK's eight QR
//!   test types, seeded and reproducible.
//! - [`householder`]: this crate's own `f64` `Q` from `(H, tau)`.
//! - [`gate`]: the per-matrix acceptance gate (`sfr`, `orth`) in `f64`.
//! - [`q_gate`]: the gates of `orgqr`, `ormqr` and `qr` in `f64`.
//! - [`oracle`]: `|diag R|` against nalgebra's `f64` QR.
//! - [`reference`]: a textbook unblocked `geqrf` in `f64`.
//! - [`recipe`]: LAPACK's QR test ratios (`xQRT01`) and threshold.
//! - [`suite`]: the test and benchmark sets and the case runner, for any
//!   operation.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod gate;
pub mod generate;
pub mod householder;
pub mod oracle;
pub mod q_gate;
pub mod recipe;
pub mod reference;
pub mod suite;

pub use gate::{GateReport, MatrixGate, check};
pub use generate::{
    Case, LapackType, ParseError, Spec, format_shape, generate, parse_shape, randn_matrices,
};
pub use householder::householder_product;
pub use oracle::diag_r_mismatch;
pub use q_gate::{Metric, OpMatrixGate, OpReport, check_orgqr, check_ormqr, check_qr};
pub use recipe::{LAPACK_EPS, LAPACK_THRESH, lapack_ratios};
pub use reference::geqr2_f64;
pub use suite::{
    CaseResult, RunOptions, Set, benchmark_set, gate_op, geomean, run_case, run_spec, test_set,
};
