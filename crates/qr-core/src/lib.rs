//! The contract of qr-rs: batched Householder QR in the exact LAPACK `geqrf` form.
//!
//! # Input
//!
//! `batch` matrices, each `n x n` `f32`, stored contiguously and row-major:
//! element `(i, j)` of matrix `b` is at `b*n*n + i*n + j`. This is exactly a
//! contiguous torch tensor of shape `(batch, n, n)`.
//!
//! # Output `(H, tau)`
//!
//! What `torch.geqrf` / LAPACK `sgeqrf` return for each matrix, stored with the
//! same row-major layout as the input. For column `j` (0-based) of the partly
//! reduced matrix `A_j`, let `x = A_j[j.., j]`, `alpha = x[0]` and
//! `xnorm = ||x[1..]||_2`:
//!
//! - `xnorm == 0`: `tau[j] = 0` (so `H_j = I`), `R[j][j] = alpha`, and the
//!   stored `v[1..]` is zero.
//! - otherwise `beta = -copysign(hypot(alpha, xnorm), alpha)`,
//!   `tau[j] = (beta - alpha) / beta`, `v[1..] = x[1..] / (alpha - beta)` and
//!   `R[j][j] = beta`.
//!
//! `H` holds `R` on and above the diagonal and `v[1..]` below it (`v[0] = 1`
//! is implicit). With `H_j = I - tau[j] v v^T` and `Q = H_0 H_1 ... H_{n-1}`,
//! `A = Q R`. Every `tau[j]` lies in `[0, 2]`, and is exactly `0` precisely when
//! the sub-column below the diagonal is exactly zero.
//!
//! Norms never overflow or underflow for inputs anywhere in the `f32` normal
//! range (as LAPACK's `slarfg`/`snrm2` scale for this): a matrix of `1e-30`s or
//! of `1e+30`s is a valid input and factors to the gate below.
//!
//! # Acceptance gate (per matrix, in `f64`, `eps = 2^-23`)
//!
//! - factor residual `||R - Q^T A||_1 <= 20 n eps ||A||_1`
//! - orthogonality `||Q^T Q - I||_1 <= 100 n eps`
//!
//! reported as `sfr = ||R - Q^T A||_1 / (n eps ||A||_1)` and
//! `orth = ||Q^T Q - I||_1 / (n eps)`. The project's own bar is stricter:
//! `sfr <= 5` and `orth <= 25` on every matrix. Low-precision arithmetic may
//! be used inside a backend, never in what is returned.
//!
//! # `Q` from `(H, tau)`: `orgqr`, `ormqr`, `qr`
//!
//! - `orgqr` (LAPACK `sorgqr`, torch `linalg.householder_product`): from a
//!   batch of `(H, tau)`, exactly as above, form each
//!   `Q = H_0 H_1 ... H_{n-1}` as a dense `n x n` row-major matrix. Only the
//!   entries of `H` strictly below the diagonal and `tau` are read.
//! - `ormqr` (LAPACK `sormqr`, torch `ormqr`): overwrite each `C` with
//!   `op(Q) C` ([`Side::Left`], `C` is `n x k`) or `C op(Q)`
//!   ([`Side::Right`], `C` is `k x n`), `op(Q)` being `Q` or `Q^T`
//!   ([`Transpose`]), row-major, any `k >= 0`.
//! - `qr` (torch `linalg.qr`, mode "reduced"): `A = Q R` with `R` the upper
//!   triangle of `geqrf`'s `H` (its signs: `R[j][j] = beta`) and `Q` its
//!   `orgqr`, bit for bit the two calls in a row.
//!
//! Their gates, per matrix in `f64` against the `f64` product of the same
//! reflectors `Q64`: `||Q - Q64||_1 / (n eps)` for `orgqr`, with `orth` as
//! above and `||A - Q R||_1 / (n eps ||A||_1)` for `qr`;
//! `||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)` for `ormqr`. The project's
//! bar is 5 for these errors, as for `sfr`.
//!
//! A matrix whose reflectors (`tau`, or `H` below the diagonal) hold a NaN
//! or an infinity gets [`Info::NON_FINITE`] and NaN in its result; the
//! rest of the batch is still computed. `tau` outside `[0, 2]` is not an
//! error: LAPACK computes with it, and so do the backends.
//!
//! # Failures
//!
//! Misuse (buffer lengths that do not match the shape, sizes whose byte count
//! overflows, a missing device) is a [`QrError`]. Numerical trouble in one
//! matrix is that matrix's [`Info`] code; the rest of the batch is still
//! factored.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod backend;
mod batch;
mod error;
mod info;
mod q;
mod shape;

pub use backend::{
    Backend, BenchOptions, BenchTiming, Factorization, Operation, geqrf, orgqr, ormqr, qr,
    time_on_host,
};
pub use batch::{BatchMut, BatchRef};
pub use error::QrError;
pub use info::Info;
pub use q::{ApplyQ, Matrices, QrFactors, Reflectors, Side, Transpose, all_finite, upper_triangle};
pub use shape::Shape;

/// Machine epsilon of `f32` as the gate uses it: `2^-23`.
pub const EPS_F32: f64 = f32::EPSILON as f64;
