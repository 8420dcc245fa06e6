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

mod faer;
mod gpu;
#[cfg(feature = "lapack")]
mod lapack;
mod nalgebra;

use qr_core::{Backend, BatchMut, BatchRef, Info};
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

/// The CPU peers `names` ask for, in order; `faer` and `lapack` expand to
/// their `-batch` and `-inner` configurations.
pub fn cpu_peers(names: &[String]) -> Result<Vec<Box<dyn Backend>>, CliError> {
    let mut peers: Vec<Box<dyn Backend>> = Vec::new();
    for name in names {
        match name.as_str() {
            "faer" => {
                peers.push(Box::new(FaerPeer::new(Spread::Batch)));
                peers.push(Box::new(FaerPeer::new(Spread::Inner)));
            }
            "faer-batch" => peers.push(Box::new(FaerPeer::new(Spread::Batch))),
            "faer-inner" => peers.push(Box::new(FaerPeer::new(Spread::Inner))),
            "nalgebra" => peers.push(Box::new(NalgebraPeer)),
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
fn push_lapack(name: &str, peers: &mut Vec<Box<dyn Backend>>) -> Result<(), CliError> {
    use self::lapack::LapackPeer;
    if name != "lapack-inner" {
        peers.push(Box::new(LapackPeer::new(Spread::Batch)));
    }
    if name != "lapack-batch" {
        peers.push(Box::new(LapackPeer::new(Spread::Inner)));
    }
    Ok(())
}

#[cfg(not(feature = "lapack"))]
fn push_lapack(name: &str, _: &mut Vec<Box<dyn Backend>>) -> Result<(), CliError> {
    Err(CliError(format!(
        "peer `{name}` needs LAPACK: build with `--features lapack` (and libopenblas-dev installed)"
    )))
}

/// The GPU peers `names` ask for, on device 0.
pub fn gpu_peers(names: &[String]) -> Result<Vec<Box<dyn Backend>>, CliError> {
    names.iter().map(|name| gpu::peer(name)).collect()
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
    use qr_core::{Backend, Shape, geqrf};
    use qr_verify::{Spec, check, generate};

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
