//! The `qr_v2` test and benchmark sets (DESIGN section 2) as data, and the
//! runner that generates, runs, gates and times one case of any
//! [`Operation`] on any backend.

use std::fmt;
use std::str::FromStr;

use qr_core::{
    ApplyQ, Backend, BatchRef, BenchOptions, BenchTiming, Factorization, Info, Operation, QrError,
    QrFactors, Reflectors, Shape,
};

use crate::gate;
use crate::generate::{Case, ParseError, Spec, generate, randn_matrices};
use crate::q_gate::{self, Applied, OpReport, QrOutputs};

/// Which suite to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Set {
    /// The 22 correctness cases.
    Tests,
    /// The 14 ranked timing cases.
    Benchmarks,
}

impl Set {
    /// The set's cases.
    pub fn specs(self) -> Vec<Spec> {
        match self {
            Set::Tests => test_set(),
            Set::Benchmarks => benchmark_set(),
        }
    }
}

impl fmt::Display for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Set::Tests => "tests",
            Set::Benchmarks => "benchmarks",
        })
    }
}

impl FromStr for Set {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tests" => Ok(Set::Tests),
            "benchmarks" => Ok(Set::Benchmarks),
            _ => Err(ParseError(format!(
                "unknown set `{s}` (expected `tests` or `benchmarks`)"
            ))),
        }
    }
}

const fn spec(batch: usize, n: usize, cond: f64, case: Case) -> Spec {
    Spec {
        batch,
        n,
        cond,
        case,
    }
}

/// The 22 cases of the `qr_v2` test set, in DESIGN's order.
pub fn test_set() -> Vec<Spec> {
    use Case::*;
    vec![
        spec(20, 32, 1.0, Dense),
        spec(40, 176, 1.0, Dense),
        spec(40, 352, 1.0, Dense),
        spec(16, 512, 2.0, Dense),
        spec(4, 1024, 2.0, Dense),
        spec(1, 4096, 1.0, Dense),
        spec(16, 512, 4.0, Dense),
        spec(16, 512, 0.0, Rankdef),
        spec(16, 512, 0.0, Clustered),
        spec(16, 512, 0.0, Band),
        spec(16, 512, 0.0, Rowscale),
        spec(16, 512, 0.0, Nearcollinear),
        spec(4, 1024, 4.0, Dense),
        spec(4, 1024, 0.0, Rankdef),
        spec(4, 1024, 0.0, Nearrank),
        spec(4, 1024, 0.0, Clustered),
        spec(2, 2048, 2.0, Dense),
        spec(2, 2048, 0.0, Rankdef),
        spec(1, 4096, 0.0, Upper),
        spec(16, 512, 2.0, Mixed),
        spec(4, 1024, 2.0, Mixed),
        spec(2, 2048, 2.0, Mixed),
    ]
}

/// The 14 ranked cases of the `qr_v2` benchmark set, in DESIGN's order.
pub fn benchmark_set() -> Vec<Spec> {
    use Case::*;
    vec![
        spec(20, 32, 1.0, Dense),
        spec(40, 176, 1.0, Dense),
        spec(40, 352, 1.0, Dense),
        spec(640, 512, 2.0, Dense),
        spec(60, 1024, 2.0, Dense),
        spec(8, 2048, 1.0, Dense),
        spec(2, 4096, 1.0, Dense),
        spec(640, 512, 2.0, Mixed),
        spec(60, 1024, 2.0, Mixed),
        spec(640, 512, 0.0, Rankdef),
        spec(640, 512, 0.0, Clustered),
        spec(60, 1024, 0.0, Nearrank),
        spec(640, 512, 0.0, Rowscale),
        spec(640, 512, 0.0, Nearcollinear),
    ]
}

/// How [`run_case`] sizes, seeds and times a case.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Base seed; input `i` of a case is generated from [`input_seed`]`(seed, i)`.
    pub seed: u64,
    /// Run at most this many matrices per input instead of the spec's batch.
    pub max_batch: Option<usize>,
    /// Passed to [`Backend::bench`].
    pub bench: BenchOptions,
    /// Total bytes of the list of inputs timed together (the ranking uses 256 MiB).
    pub list_bytes: usize,
    /// Most inputs in the list (the ranking uses 50).
    pub max_inputs: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            seed: 0,
            max_batch: None,
            bench: BenchOptions::default(),
            list_bytes: 256 << 20,
            max_inputs: 50,
        }
    }
}

/// What [`run_case`] measured for one spec.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The spec asked for.
    pub spec: Spec,
    /// The operation run, gated and timed.
    pub op: Operation,
    /// Matrices per input actually run (the spec's batch unless capped).
    pub batch_run: usize,
    /// `true` when `batch_run < spec.batch`.
    pub capped: bool,
    /// Inputs in the timed list.
    pub inputs: usize,
    /// Time per input, from the backend's own clock.
    pub timing: BenchTiming,
    /// The gate of every matrix of every input ([`gate_op`]'s metrics).
    pub report: OpReport,
}

impl CaseResult {
    /// Every matrix passed the gate.
    pub fn passes_gate(&self) -> bool {
        self.report.passes_gate()
    }
}

/// The seed of input `index` of a case run from `seed` (the anchor script's
/// `seed + 42 (i + 1)`).
pub fn input_seed(seed: u64, index: usize) -> u64 {
    seed.wrapping_add(42u64.wrapping_mul(index as u64 + 1))
}

/// The case `spec` as [`run_case`] runs it: its batch capped at
/// `opts.max_batch`.
pub fn run_spec(spec: &Spec, opts: &RunOptions) -> Spec {
    Spec {
        batch: opts.max_batch.map_or(spec.batch, |m| m.min(spec.batch)),
        ..*spec
    }
}

/// The seed of the `C` that `ormqr` is gated on for the input generated
/// from `input_seed`: its complement, so that `C` is drawn independently of
/// the matrix whose `Q` is applied to it.
pub fn c_seed(input_seed: u64) -> u64 {
    !input_seed
}

/// Runs one case of `op` on `backend`: generates the list of inputs
/// (`clamp(list_bytes / input bytes, 1, max_inputs)` of them), runs and
/// gates each once with [`gate_op`], untimed, then times the list with
/// [`Backend::bench_op`].
pub fn run_case(
    backend: &dyn Backend,
    op: Operation,
    spec: &Spec,
    opts: &RunOptions,
) -> Result<CaseResult, QrError> {
    let run = run_spec(spec, opts);
    let batch_run = run.batch;
    let shape = run.shape()?;
    let inputs = (opts.list_bytes / shape.a_bytes().max(1)).clamp(1, opts.max_inputs.max(1));
    let seeds: Vec<u64> = (0..inputs).map(|i| input_seed(opts.seed, i)).collect();
    let list: Vec<Vec<f32>> = seeds.iter().map(|&s| generate(&run, s)).collect();
    let mut report = OpReport::new(q_gate::Metric::of(op));
    for (a, &seed) in list.iter().zip(&seeds) {
        report.extend(gate_op(backend, op, shape, a, c_seed(seed))?);
    }
    let views: Vec<&[f32]> = list.iter().map(Vec::as_slice).collect();
    let timing = backend.bench_op(op, shape, &views, &opts.bench)?;
    Ok(CaseResult {
        spec: *spec,
        op,
        batch_run,
        capped: batch_run < spec.batch,
        inputs,
        timing,
        report,
    })
}

/// Runs `op` once on the batch `a` with `backend` and gates every matrix
/// ([`Metric::of`](q_gate::Metric::of) says what is measured):
///
/// - `geqrf`: [`gate::check`] of its `(H, tau)`;
/// - `orgqr`: the backend's `geqrf`, then [`q_gate::check_orgqr`] of the
///   `orgqr` of those reflectors;
/// - `ormqr`: the backend's `geqrf`, then all four products of its `Q`
///   with one `C` of `n x n` standard normal values drawn from `c_seed`,
///   gated by [`q_gate::check_ormqr`];
/// - `qr`: `geqrf`, `orgqr` and `qr` on `a`, gated by [`q_gate::check_qr`]
///   (which also counts what `qr` does not reproduce bit for bit).
pub fn gate_op(
    backend: &dyn Backend,
    op: Operation,
    shape: Shape,
    a: &[f32],
    c_seed: u64,
) -> Result<OpReport, QrError> {
    let mut f = Factorization::zeroed(shape)?;
    backend.geqrf_into(BatchRef::new(shape, a)?, f.as_batch_mut()?)?;
    let refl = Reflectors::new(shape, &f.h, &f.tau)?;
    let orgqr = || -> Result<(Vec<f32>, Vec<Info>), QrError> {
        let mut q = vec![0.0f32; shape.a_len()];
        let mut info = vec![Info::OK; shape.info_len()];
        backend.orgqr_into(refl, &mut q, &mut info)?;
        Ok((q, info))
    };
    match op {
        Operation::Geqrf => Ok(OpReport::from_geqrf(
            &gate::check(shape, a, &f.h, &f.tau)?,
            &f.info,
        )),
        Operation::Orgqr => {
            let (q, info) = orgqr()?;
            q_gate::check_orgqr(refl, &q, &info)
        }
        Operation::Ormqr(_) => {
            let n = shape.n();
            let c = randn_matrices(shape.batch(), n * n, c_seed);
            let mut outs = Vec::with_capacity(ApplyQ::ALL.len());
            for apply in ApplyQ::ALL {
                let mut out = c.clone();
                let mut info = vec![Info::OK; shape.info_len()];
                backend.ormqr_into(refl, apply, n, &mut out, &mut info)?;
                outs.push((apply, out, info));
            }
            let applied: Vec<Applied<'_>> = outs
                .iter()
                .map(|(op, out, info)| Applied { op: *op, out, info })
                .collect();
            q_gate::check_ormqr(refl, n, &c, &applied)
        }
        Operation::Qr => {
            let (q_split, _) = orgqr()?;
            let mut out = QrFactors::zeroed(shape)?;
            backend.qr_into(
                BatchRef::new(shape, a)?,
                &mut out.q,
                &mut out.r,
                &mut out.info,
            )?;
            let outputs = QrOutputs {
                q: &out.q,
                r: &out.r,
                info: &out.info,
            };
            q_gate::check_qr(a, refl, &f.info, &q_split, outputs)
        }
    }
}

/// The geometric mean; NaN for an empty sequence or a non-positive value.
pub fn geomean(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut count) = (0.0, 0usize);
    for x in xs {
        if x.is_nan() || x <= 0.0 {
            return f64::NAN;
        }
        sum += x.ln();
        count += 1;
    }
    if count == 0 {
        f64::NAN
    } else {
        (sum / count as f64).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_have_designs_counts_and_shapes() {
        let t = test_set();
        assert_eq!(t.len(), 22);
        assert_eq!(t[7].to_string(), "16,512,0,rankdef");
        assert_eq!(t[18].to_string(), "1,4096,0,upper");
        let b = benchmark_set();
        assert_eq!(b.len(), 14);
        assert_eq!(b[3].to_string(), "640,512,2,dense");
        assert_eq!(b[13].to_string(), "640,512,0,nearcollinear");
        for s in t.iter().chain(&b) {
            assert_eq!(s.to_string().parse::<Spec>().as_ref(), Ok(s));
        }
        assert_eq!("tests".parse::<Set>(), Ok(Set::Tests));
        assert_eq!(
            Set::Benchmarks.to_string().parse::<Set>(),
            Ok(Set::Benchmarks)
        );
        assert!("bench".parse::<Set>().is_err());
    }

    #[test]
    fn geomean_values() {
        assert!((geomean([2.0, 8.0]) - 4.0).abs() < 1e-12);
        assert!((geomean([5.0]) - 5.0).abs() < 1e-12);
        assert!(geomean([]).is_nan());
        assert!(geomean([1.0, 0.0]).is_nan());
        assert!(geomean([1.0, f64::NAN]).is_nan());
    }

    #[test]
    fn input_seeds_differ() {
        assert_eq!(input_seed(0, 0), 42);
        assert_ne!(input_seed(7, 1), input_seed(7, 2));
        assert_eq!(input_seed(u64::MAX, 0), 41);
    }
}
