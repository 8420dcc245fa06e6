//! Peer libraries that `qr bench` times against ours, each as a [`Backend`].
//!
//! A peer gets the same row-major batch our backends get and returns its own
//! factorization of every matrix in `out`: the copy into the peer's layout
//! and back is part of its time, as it is of ours. Peer outputs are timed,
//! not gated (faer's and nalgebra's are not `geqrf` form in general); each
//! file's tests check on small full-rank inputs that the peer really
//! factors.
//!
//! CPU peers run each library at the configurations worth comparing:
//! `-batch` runs one matrix per task with rayon across the batch and the
//! library single-threaded; `-inner` runs the matrices one after another
//! with the library's own parallelism inside each.
//!
//! For the `Q` operations, a peer that takes `geqrf`'s `(H, tau)` (LAPACK's
//! `sorgqr`/`sormqr`, the GPU peers) implements `orgqr_into`/`ormqr_into`
//! and is timed by qr-core's `bench_op` like ours: its own `geqrf` untimed,
//! then the operation. nalgebra and faer have no such input: their
//! `bench_op` times what their users do to get `Q` from their own QR (see
//! [`Peer::times`]), which `qr bench` prints under its header.

mod faer;
mod gpu;
#[cfg(feature = "lapack")]
mod lapack;
mod nalgebra;

use qr_core::{Backend, BatchMut, BatchRef, Info, Operation};
use rayon::prelude::*;

use crate::error::CliError;

pub use self::faer::FaerPeer;
pub use self::nalgebra::NalgebraPeer;

/// How a CPU peer spreads a batch over the cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// One matrix per rayon task, the library single-threaded.
    Batch,
    /// Matrices in order, the library's own parallelism inside each.
    Inner,
}

impl Spread {
    /// The suffix of the peer's name.
    pub fn suffix(self) -> &'static str {
        match self {
            Spread::Batch => "batch",
            Spread::Inner => "inner",
        }
    }
}

/// The CPU peers `--peers` names when none are given.
pub const CPU_DEFAULT: &[&str] = if cfg!(feature = "lapack") {
    &["faer", "nalgebra", "lapack"]
} else {
    &["faer", "nalgebra"]
};

/// The GPU peers `--peers` names when none are given.
pub const GPU_DEFAULT: &[&str] = &["cusolver", "cublas-batched"];

/// A peer library and what its timing of each operation covers.
pub struct Peer {
    /// The library as a backend; its `bench_op` is what `qr bench` times.
    pub backend: Box<dyn Backend>,
    times: fn(Operation) -> &'static str,
}

impl Peer {
    /// A peer timed through qr-core's `bench_op`, from its own `(H, tau)`.
    pub fn from_reflectors(backend: Box<dyn Backend>) -> Self {
        Self {
            backend,
            times: from_reflectors,
        }
    }

    /// A peer whose `bench_op` times its own equivalent, described by `times`.
    pub fn own(backend: Box<dyn Backend>, times: fn(Operation) -> &'static str) -> Self {
        Self { backend, times }
    }

    /// The peer's name.
    pub fn name(&self) -> &str {
        self.backend.name()
    }

    /// What the peer's timing of `op` covers.
    pub fn times(&self, op: Operation) -> &'static str {
        (self.times)(op)
    }
}

/// What qr-core's `bench_op` times, for ours and for peers that take `(H, tau)`.
pub fn from_reflectors(op: Operation) -> &'static str {
    match op {
        Operation::Geqrf => "geqrf",
        Operation::Orgqr => "orgqr of its own geqrf's (H, tau), factored untimed",
        Operation::Ormqr(_) => "ormqr of its own geqrf's (H, tau), factored untimed",
        Operation::Qr => "geqrf then orgqr",
    }
}

/// The CPU peers `names` ask for, in order; `faer` and `lapack` expand to
/// their `-batch` and `-inner` configurations.
pub fn cpu_peers(names: &[String]) -> Result<Vec<Peer>, CliError> {
    let faer = |spread| Peer::own(Box::new(FaerPeer::new(spread)), self::faer::times);
    let mut peers = Vec::new();
    for name in names {
        match name.as_str() {
            "faer" => {
                peers.push(faer(Spread::Batch));
                peers.push(faer(Spread::Inner));
            }
            "faer-batch" => peers.push(faer(Spread::Batch)),
            "faer-inner" => peers.push(faer(Spread::Inner)),
            "nalgebra" => peers.push(Peer::own(Box::new(NalgebraPeer), self::nalgebra::times)),
            "lapack" | "lapack-batch" | "lapack-inner" => push_lapack(name, &mut peers)?,
            other => {
                return Err(CliError(format!(
                    "unknown CPU peer `{other}` (known: faer, faer-batch, faer-inner, \
                     nalgebra, lapack, lapack-batch, lapack-inner)"
                )));
            }
        }
    }
    Ok(peers)
}

#[cfg(feature = "lapack")]
fn push_lapack(name: &str, peers: &mut Vec<Peer>) -> Result<(), CliError> {
    use self::lapack::LapackPeer;
    if name != "lapack-inner" {
        peers.push(Peer::from_reflectors(Box::new(LapackPeer::new(
            Spread::Batch,
        ))));
    }
    if name != "lapack-batch" {
        peers.push(Peer::from_reflectors(Box::new(LapackPeer::new(
            Spread::Inner,
        ))));
    }
    Ok(())
}

#[cfg(not(feature = "lapack"))]
fn push_lapack(name: &str, _: &mut Vec<Peer>) -> Result<(), CliError> {
    Err(CliError(format!(
        "peer `{name}` needs LAPACK: build with `--features lapack` (and libopenblas-dev installed)"
    )))
}

/// The GPU peers `names` ask for, on device 0.
pub fn gpu_peers(names: &[String]) -> Result<Vec<Peer>, CliError> {
    names
        .iter()
        .map(|name| gpu::peer(name).map(Peer::from_reflectors))
        .collect()
}

/// Writes the `rows x cols` matrix whose entry `(i, j)` is `at(i, j)` (a
/// faer or nalgebra matrix, column-major) into `dst`, row-major.
fn write_row_major(rows: usize, cols: usize, at: impl Fn(usize, usize) -> f32, dst: &mut [f32]) {
    for (i, row) in dst.chunks_exact_mut(cols.max(1)).enumerate().take(rows) {
        for (j, d) in row.iter_mut().enumerate() {
            *d = at(i, j);
        }
    }
}

/// Runs `factor(a_b, h_b, tau_b)` on every matrix of the batch, spread as
/// `spread` says. A matrix holding a NaN or an infinity is not passed to the
/// peer (its output would be meaningless): it gets `Info::NON_FINITE` and
/// NaN outputs, as the contract says for our backends.
fn for_each_matrix<F>(a: BatchRef<'_>, mut out: BatchMut<'_>, spread: Spread, factor: F)
where
    F: Fn(&[f32], &mut [f32], &mut [f32]) + Sync,
{
    let shape = a.shape();
    if shape.is_empty() {
        return;
    }
    let (len, n) = (shape.matrix_len(), shape.n());
    let (h, tau, info) = out.parts();
    let one = |a: &[f32], h: &mut [f32], tau: &mut [f32], info: &mut Info| {
        if a.iter().all(|x| x.is_finite()) {
            factor(a, h, tau);
            *info = Info::OK;
        } else {
            h.fill(f32::NAN);
            tau.fill(f32::NAN);
            *info = Info::NON_FINITE;
        }
    };
    let a = a.as_slice();
    match spread {
        Spread::Batch => a
            .par_chunks(len)
            .zip(h.par_chunks_mut(len))
            .zip(tau.par_chunks_mut(n))
            .zip(info.par_iter_mut())
            .for_each(|(((a, h), tau), info)| one(a, h, tau, info)),
        Spread::Inner => {
            let work = a
                .chunks(len)
                .zip(h.chunks_mut(len))
                .zip(tau.chunks_mut(n))
                .zip(info.iter_mut());
            for (((a, h), tau), info) in work {
                one(a, h, tau, info);
            }
        }
    }
}

/// `dst = src^T` for `n x n` matrices: row-major to column-major and back.
fn transpose_into(n: usize, src: &[f32], dst: &mut [f32]) {
    for (j, col) in dst.chunks_exact_mut(n).enumerate() {
        for (i, d) in col.iter_mut().enumerate() {
            *d = src[i * n + j];
        }
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::time::Duration;

    use qr_core::{Backend, BenchOptions, EPS_F32, Shape, geqrf};
    use qr_verify::{Spec, check, generate};

    /// One timed repetition, no warm-up, no flush: enough to run the code.
    pub fn one_rep() -> BenchOptions {
        BenchOptions {
            warmup: 0,
            min_reps: 1,
            max_reps: 1,
            budget: Duration::ZERO,
            flush_bytes: 0,
            ..BenchOptions::default()
        }
    }

    /// Checks that `q_of(n, a)` (row-major in and out) is a `Q` of a small
    /// full-rank `a`, whatever its signs: orthogonal (`orth <= 25`) and
    /// with `Q^T A` upper triangular to within `5 n eps ||A||_1`.
    pub fn assert_q_factors(n: usize, q_of: impl Fn(usize, &[f32]) -> Vec<f32>) {
        let spec = Spec {
            batch: 1,
            n,
            cond: 1.0,
            case: qr_verify::Case::Dense,
        };
        let a = generate(&spec, 5);
        let q = q_of(n, &a);
        let at = |m: &[f32], i: usize, j: usize| f64::from(m[i * n + j]);
        let product = |x: &[f32], y: &[f32], i: usize, j: usize| -> f64 {
            (0..n).map(|l| at(x, l, i) * at(y, l, j)).sum()
        };
        let col_norm = |f: &dyn Fn(usize, usize) -> f64| {
            (0..n)
                .map(|j| (0..n).map(|i| f(i, j).abs()).sum::<f64>())
                .fold(0.0, f64::max)
        };
        let scale = n as f64 * EPS_F32;
        let orth = col_norm(&|i, j| product(&q, &q, i, j) - if i == j { 1.0 } else { 0.0 }) / scale;
        assert!(orth <= 25.0, "n={n}: orth {orth}");
        let anorm = col_norm(&|i, j| at(&a, i, j));
        let lower = col_norm(&|i, j| if i > j { product(&q, &a, i, j) } else { 0.0 });
        assert!(lower <= 5.0 * scale * anorm, "n={n}: tril(Q^T A) {lower}");
    }

    /// Factors a small full-rank batch with `peer` and gates it: a peer that
    /// returns `geqrf` form on such inputs must pass the project's bar.
    pub fn assert_peer_meets_bar(peer: &dyn Backend, n: usize) {
        let spec = Spec {
            batch: 3,
            n,
            cond: 1.0,
            case: qr_verify::Case::Dense,
        };
        let shape = Shape::new(spec.batch, n).unwrap();
        let a = generate(&spec, 7);
        let f = geqrf(peer, shape, &a).unwrap();
        assert!(f.all_ok(), "{}: info {:?}", peer.name(), f.info);
        let report = check(shape, &a, &f.h, &f.tau).unwrap();
        assert!(
            report.meets_bar(),
            "{} n={n}: worst sfr {}, orth {}",
            peer.name(),
            report.worst_sfr(),
            report.worst_orth()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_round_trips() {
        let a: Vec<f32> = (0..12).map(|x| x as f32).collect();
        let mut t = vec![0.0; 9];
        transpose_into(3, &a[..9], &mut t);
        assert_eq!(t, [0.0, 3.0, 6.0, 1.0, 4.0, 7.0, 2.0, 5.0, 8.0]);
        let mut back = vec![0.0; 9];
        transpose_into(3, &t, &mut back);
        assert_eq!(back, &a[..9]);
    }

    #[test]
    fn names_expand_and_unknown_names_fail() {
        let names = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let peers = cpu_peers(&names(&["faer", "nalgebra"])).unwrap();
        let got: Vec<&str> = peers.iter().map(|p| p.name()).collect();
        assert_eq!(got, ["faer-batch", "faer-inner", "nalgebra-batch"]);
        // Each says what it times; the Q operations are not geqrf's.
        for p in &peers {
            assert_eq!(p.times(Operation::Geqrf), "geqrf");
            assert!(p.times(Operation::Orgqr).contains("own QR"), "{}", p.name());
        }
        assert!(cpu_peers(&names(&["eigen"])).is_err());
        assert_eq!(
            cpu_peers(&names(&["lapack"])).is_ok(),
            cfg!(feature = "lapack")
        );
    }

    #[test]
    fn non_finite_matrices_are_flagged_and_skipped() {
        let shape = qr_core::Shape::new(2, 2).unwrap();
        let a = [1.0, 2.0, 3.0, 4.0, f32::NAN, 0.0, 0.0, 1.0];
        let f = qr_core::geqrf(&FaerPeer::new(Spread::Batch), shape, &a).unwrap();
        assert_eq!(f.info, [Info::OK, Info::NON_FINITE]);
    }
}
