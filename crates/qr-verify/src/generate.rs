//! Seeded input generators: the `qr_v2` distributions and LAPACK's eight
//! QR test types, named by [`Case`] and sized by [`Spec`].
//!
//! Every matrix of a batch has its own random stream, ChaCha8 seeded with the
//! batch seed and switched to stream `b` for matrix `b`, so matrices are
//! independent, a batch's prefix does not depend on its length (except the
//! `mixed` profile draw, which is a batch-level decision), and the same seed
//! gives the same matrices everywhere. Values are computed in `f64` from
//! `f32` normal draws and rounded to `f32` once at the end.

mod lapack;
mod qr_v2;

use std::fmt;
use std::str::FromStr;

use qr_core::{QrError, Shape};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

pub use lapack::LapackType;

/// A named input distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Case {
    /// `randn` with column scaling by `cond`.
    Dense,
    /// `triu(randn)`, diagonal `+= linspace(1, 0.25, n)`, column scaling.
    Upper,
    /// Diagonal `+-logspace(0, -max(cond, 2), n)` with random signs.
    Diagonal,
    /// Columns from `3n/4` on set to zero, column scaling.
    Rankdef,
    /// Columns from `r = 3n/4` on copy columns `0..n-r` plus `1e-5 * randn`.
    Nearrank,
    /// Columns from `n/2` on times `4 eps`, the four around `n/2` times `sqrt(eps)`.
    Clustered,
    /// Band of half-width `max(2, min(32, n/32))`, diagonal `+= linspace(1, 0.5, n)`.
    Band,
    /// One shared random column plus `1e-4 * randn` in every column.
    Nearcollinear,
    /// Rows times `logspace(0, -max(cond, 4), n)`.
    Rowscale,
    /// Each matrix draws one profile: dense (weight 6) or one of rankdef,
    /// nearrank, clustered, band, rowscale, nearcollinear (weight 1 each).
    Mixed,
    /// One of LAPACK's eight QR test matrix types (`cond` is not used).
    Lapack(LapackType),
}

impl Case {
    /// The ten `qr_v2` distributions, in DESIGN's order.
    pub const ALL_QR_V2: &'static [Case] = &[
        Case::Dense,
        Case::Upper,
        Case::Diagonal,
        Case::Rankdef,
        Case::Nearrank,
        Case::Clustered,
        Case::Band,
        Case::Nearcollinear,
        Case::Rowscale,
        Case::Mixed,
    ];

    /// Every case: the ten `qr_v2` distributions, then LAPACK's eight types.
    pub fn all() -> impl Iterator<Item = Case> {
        Self::ALL_QR_V2
            .iter()
            .copied()
            .chain(LapackType::ALL.iter().map(|&t| Case::Lapack(t)))
    }

    fn name(self) -> &'static str {
        match self {
            Case::Dense => "dense",
            Case::Upper => "upper",
            Case::Diagonal => "diagonal",
            Case::Rankdef => "rankdef",
            Case::Nearrank => "nearrank",
            Case::Clustered => "clustered",
            Case::Band => "band",
            Case::Nearcollinear => "nearcollinear",
            Case::Rowscale => "rowscale",
            Case::Mixed => "mixed",
            Case::Lapack(t) => t.name(),
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Case {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Case::all()
            .find(|c| c.name() == s)
            .ok_or_else(|| ParseError(format!("unknown case `{s}`")))
    }
}

/// Why a [`Case`] or [`Spec`] string did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// One suite entry: `batch` matrices of order `n` drawn from `case`, with
/// column-scaling exponent `cond` where the case uses one.
///
/// Written and parsed as `"batch,n,cond,case"`, e.g. `"640,512,2,dense"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    /// Matrices in the batch.
    pub batch: usize,
    /// Order of each matrix.
    pub n: usize,
    /// Columns are scaled by `logspace(0, -cond, n)` where the case says so.
    pub cond: f64,
    /// The distribution.
    pub case: Case,
}

impl Spec {
    /// The batch shape, validated (sizes whose byte count overflows are errors).
    pub fn shape(&self) -> Result<Shape, QrError> {
        Shape::new(self.batch, self.n)
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{},{}", self.batch, self.n, self.cond, self.case)
    }
}

impl FromStr for Spec {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad =
            |why: &str| ParseError(format!("spec `{s}`: {why} (expected `batch,n,cond,case`)"));
        let fields: Vec<&str> = s.split(',').map(str::trim).collect();
        let [batch, n, cond, case] = fields[..] else {
            return Err(bad("needs exactly four fields"));
        };
        let batch = batch.parse().map_err(|_| bad("batch is not a count"))?;
        let n = n.parse().map_err(|_| bad("n is not a count"))?;
        let cond: f64 = cond.parse().map_err(|_| bad("cond is not a number"))?;
        if !(cond.is_finite() && cond >= 0.0) {
            return Err(bad("cond must be finite and non-negative"));
        }
        if case.is_empty() {
            return Err(bad("the case is empty"));
        }
        let case = case.parse().map_err(|e: ParseError| bad(&e.0))?;
        let spec = Spec {
            batch,
            n,
            cond,
            case,
        };
        spec.shape().map_err(|e| bad(&e.to_string()))?;
        Ok(spec)
    }
}

/// Parses a batch shape written `BATCHxN` (e.g. `"40x176"`, surrounding
/// white space allowed), validated by [`Shape::new`]: a count that is not a
/// `usize`, or sizes whose byte counts overflow, are errors, never a panic.
/// [`format_shape`] writes the form this reads.
pub fn parse_shape(s: &str) -> Result<Shape, ParseError> {
    let bad = |why: &str| {
        ParseError(format!(
            "shape `{s}`: {why} (expected BATCHxN, e.g. 40x176)"
        ))
    };
    let (batch, n) = s.trim().split_once('x').ok_or_else(|| bad("no `x`"))?;
    let batch = batch.parse().map_err(|_| bad("batch is not a count"))?;
    let n = n.parse().map_err(|_| bad("n is not a count"))?;
    Shape::new(batch, n).map_err(|e| bad(&e.to_string()))
}

/// Writes `shape` as `BATCHxN`, the form [`parse_shape`] reads (qr-core's
/// `Display` for [`Shape`] writes `BATCHxNxN`).
pub fn format_shape(shape: Shape) -> String {
    format!("{}x{}", shape.batch(), shape.n())
}

/// Generates the batch `spec` describes from `seed`: row-major,
/// `batch * n * n` values, the same bits for the same `(spec, seed)`.
///
/// # Panics
///
/// If `batch * n * n` overflows `usize`; [`Spec::from_str`] and
/// [`Spec::shape`] reject such specs.
pub fn generate(spec: &Spec, seed: u64) -> Vec<f32> {
    let n = spec.n;
    let len = n * n;
    let mut out = vec![0.0f32; spec.batch * len];
    if len == 0 {
        return out;
    }
    let profiles = match spec.case {
        Case::Mixed => mixed_profiles(spec.batch, seed),
        case => vec![case; spec.batch],
    };
    out.par_chunks_mut(len)
        .zip(profiles)
        .enumerate()
        .for_each(|(b, (m, case))| {
            let mut rng = matrix_rng(seed, b);
            let a = generate_matrix(case, n, spec.cond, &mut rng);
            for (o, x) in m.iter_mut().zip(a) {
                *o = x as f32;
            }
        });
    out
}

/// `batch` matrices of `len` standard normal values each (the `C` of an
/// `ormqr`, any `rows x cols` with `rows * cols = len`), every matrix its
/// own stream as in [`generate`]: the same bits for the same arguments.
///
/// # Panics
///
/// If `batch * len` overflows `usize`.
pub fn randn_matrices(batch: usize, len: usize, seed: u64) -> Vec<f32> {
    let mut out = vec![0.0f32; batch * len];
    if len == 0 {
        return out;
    }
    out.par_chunks_mut(len).enumerate().for_each(|(b, m)| {
        let mut rng = matrix_rng(seed, b);
        for (o, x) in m.iter_mut().zip(randn(len, &mut rng)) {
            *o = x as f32;
        }
    });
    out
}

/// The random stream of matrix `b` of a batch generated from `seed`.
fn matrix_rng(seed: u64, b: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(b as u64);
    rng
}

/// The stream that draws `mixed` profiles; no batch reaches `u64::MAX` matrices.
const PROFILE_STREAM: u64 = u64::MAX;

/// Draws each matrix's `mixed` profile (dense with weight 6, every other
/// profile with weight 1), then makes sure a batch of two or more holds at
/// least one dense and one other matrix, each placed at a random position.
fn mixed_profiles(batch: usize, seed: u64) -> Vec<Case> {
    const OTHERS: [Case; 6] = [
        Case::Rankdef,
        Case::Nearrank,
        Case::Clustered,
        Case::Band,
        Case::Rowscale,
        Case::Nearcollinear,
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(PROFILE_STREAM);
    let mut profiles: Vec<Case> = (0..batch)
        .map(|_| match rng.random_range(0..12) {
            u @ 6..12 => OTHERS[u - 6],
            _ => Case::Dense,
        })
        .collect();
    if batch >= 2 {
        let dense = profiles.iter().filter(|&&c| c == Case::Dense).count();
        if dense == 0 {
            profiles[rng.random_range(0..batch)] = Case::Dense;
        } else if dense == batch {
            profiles[rng.random_range(0..batch)] = OTHERS[rng.random_range(0..OTHERS.len())];
        }
    }
    profiles
}

/// One `n x n` matrix of `case` (never `Mixed`), row-major, in `f64`.
fn generate_matrix(case: Case, n: usize, cond: f64, rng: &mut ChaCha8Rng) -> Vec<f64> {
    match case {
        Case::Lapack(t) => lapack::generate(t, n, rng),
        Case::Mixed => unreachable!("mixed is resolved to a profile per matrix"),
        case => qr_v2::generate(case, n, cond, rng),
    }
}

/// `f32` standard normal draws, widened: the base of every distribution.
fn randn(len: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..len)
        .map(|_| f64::from(rng.sample::<f32, _>(rand_distr::StandardNormal)))
        .collect()
}

/// `n` points from `a` to `b`, both included (`[a]` when `n == 1`).
fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![a];
    }
    let step = (b - a) / (n - 1) as f64;
    (0..n).map(|i| a + step * i as f64).collect()
}

/// `10^linspace(0, -c, n)`.
fn logspace_down(c: f64, n: usize) -> Vec<f64> {
    linspace(0.0, -c, n)
        .into_iter()
        .map(|e| 10f64.powf(e))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for case in Case::all() {
            assert_eq!(case.to_string().parse::<Case>(), Ok(case));
        }
        assert_eq!(Case::all().count(), 18);
        assert!("Dense".parse::<Case>().is_err());
    }

    #[test]
    fn specs_round_trip_and_reject_bad_fields() {
        let s: Spec = "640,512,2,dense".parse().unwrap();
        assert_eq!(
            s,
            Spec {
                batch: 640,
                n: 512,
                cond: 2.0,
                case: Case::Dense
            }
        );
        assert_eq!(s.to_string(), "640,512,2,dense");
        let t: Spec = "3,7,0.5,lapack-condbig".parse().unwrap();
        assert_eq!(t.to_string().parse::<Spec>(), Ok(t));
        for bad in [
            "16,512,0,",
            "16,512,0",
            "16,512,0,dense,1",
            "x,512,0,dense",
            "16,-1,0,dense",
            "16,512,-1,dense",
            "16,512,nan,dense",
            "16,512,0,densest",
            "1000000000000,1000000000,0,dense",
        ] {
            assert!(bad.parse::<Spec>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn same_seed_same_bits_and_matrices_are_independent() {
        for case in Case::all() {
            let spec = Spec {
                batch: 3,
                n: 9,
                cond: 2.0,
                case,
            };
            let a = generate(&spec, 7);
            assert_eq!(a, generate(&spec, 7), "{case}");
            assert_ne!(a, generate(&spec, 8), "{case}");
            assert!(a.iter().all(|x| x.is_finite()), "{case}");
            if case != Case::Mixed {
                assert_ne!(a[..81], a[81..162], "{case}: matrices 0 and 1 agree");
                // A shorter batch is the prefix of a longer one.
                let one = generate(&Spec { batch: 1, ..spec }, 7);
                assert_eq!(one[..], a[..81], "{case}");
            }
        }
    }

    #[test]
    fn mixed_holds_dense_and_other() {
        for seed in 0..200 {
            for batch in [2, 3, 5, 16] {
                let p = mixed_profiles(batch, seed);
                assert!(p.contains(&Case::Dense), "seed {seed} batch {batch}");
                assert!(p.iter().any(|&c| c != Case::Dense), "seed {seed}");
            }
        }
        let p: Vec<Case> = (0..2000).flat_map(|s| mixed_profiles(1, s)).collect();
        let dense = p.iter().filter(|&&c| c == Case::Dense).count();
        // Weight 6 of 12: about half dense; the bound is 7 standard deviations.
        assert!((dense as i64 - 1000).abs() < 160, "{dense} dense of 2000");
    }

    #[test]
    fn spacing_helpers() {
        assert_eq!(linspace(1.0, 0.25, 4), vec![1.0, 0.75, 0.5, 0.25]);
        assert_eq!(linspace(1.0, 0.5, 1), vec![1.0]);
        let l = logspace_down(2.0, 3);
        assert!((l[0] - 1.0).abs() < 1e-15 && (l[1] - 0.1).abs() < 1e-15);
        assert!((l[2] - 0.01).abs() < 1e-15);
    }

    #[test]
    fn randn_matrices_are_seeded_per_matrix() {
        let c = randn_matrices(3, 10, 5);
        assert_eq!(c, randn_matrices(3, 10, 5));
        assert_ne!(c, randn_matrices(3, 10, 6));
        assert_ne!(c[..10], c[10..20]);
        assert_eq!(randn_matrices(1, 10, 5)[..], c[..10]);
        assert!(c.iter().all(|x| x.is_finite() && *x != 0.0));
        assert!(randn_matrices(4, 0, 1).is_empty());
    }

    #[test]
    fn empty_shapes() {
        let spec = Spec {
            batch: 4,
            n: 0,
            cond: 0.0,
            case: Case::Mixed,
        };
        assert!(generate(&spec, 1).is_empty());
        assert!(
            generate(
                &Spec {
                    batch: 0,
                    n: 5,
                    ..spec
                },
                1
            )
            .is_empty()
        );
    }
}
