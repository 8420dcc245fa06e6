//! `qr bench`: the ranking's timing method on chosen shapes, ours against peers.
//!
//! Per shape: the list of inputs `qr suite` would time (about 256 MiB, at
//! most 50), the operation run once by our backend on every input and
//! gated (untimed), then ours and each peer timed with
//! [`Backend::bench_op`] on the same list (warm-up, cache flush before each
//! repetition, repetitions until the mean is known to 1% or the budget
//! ends). For the `Q` operations, what each peer's time covers is printed
//! under the header: nalgebra and faer have no `(H, tau)` input.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, ValueEnum};
use qr_core::{Backend, BenchTiming, Operation};
use qr_cpu::CpuBackend;
use qr_verify::suite::{c_seed, input_seed};
use qr_verify::{Case, Metric, OpReport, Spec, gate_op, geomean, parse_shape};
use serde::Serialize;

use crate::error::{CliError, Outcome};
use crate::inputs::{TimingOpts, input_list};
use crate::peers::{self, Peer};
use crate::progress;
use crate::select::{Selected, gpu, parse_strategy};
use crate::suite::{MetricRow, OpArg, verdict};
use crate::table::{Table, fmt_gate, fmt_ratio, fmt_time};

/// Which of our backends `qr bench` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchBackend {
    /// The CPU reference, against faer, nalgebra and (feature `lapack`) OpenBLAS.
    Cpu,
    /// The CUDA engine on device 0, against cuSOLVER and cuBLAS.
    Gpu,
}

/// A `BATCHxN` shape argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeArg {
    /// Matrices per input.
    pub batch: usize,
    /// Order of each matrix.
    pub n: usize,
}

impl FromStr for ShapeArg {
    type Err = CliError;

    /// Through qr-verify's [`parse_shape`], so that an accepted shape has
    /// passed `Shape::new` (its byte counts fit `isize`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shape = parse_shape(s).map_err(|e| CliError(e.to_string()))?;
        Ok(Self {
            batch: shape.batch(),
            n: shape.n(),
        })
    }
}

/// Arguments of `qr bench`.
#[derive(Clone, Debug, Args)]
pub struct BenchArgs {
    /// Our backend to time.
    #[arg(long, value_enum)]
    pub backend: BenchBackend,
    /// The operation to time (ormqr: `Q^T C` with `C` the input).
    #[arg(long, value_enum, default_value_t = OpArg::Geqrf)]
    pub op: OpArg,
    /// Shapes, comma-separated, each BATCHxN (e.g. `20x32,40x176,64x512`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub shapes: Vec<ShapeArg>,
    /// Input distribution.
    #[arg(long, default_value = "dense")]
    pub case: Case,
    /// Column-scaling exponent of the distribution.
    #[arg(long, default_value_t = 1.0)]
    pub cond: f64,
    /// Peers, comma-separated. CPU: faer (= faer-batch,faer-inner), nalgebra,
    /// lapack (= lapack-batch,lapack-inner; feature `lapack`). GPU: cusolver,
    /// cublas-batched. Default: all of the backend's peers that are built in.
    #[arg(long, value_delimiter = ',')]
    pub peers: Vec<String>,
    /// Force this GPU strategy for our backend.
    #[arg(long, value_name = "STRATEGY")]
    pub plan: Option<String>,
    /// Also write the rows as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub timing: TimingOpts,
}

/// One timing as written to JSON (seconds per input), or why it failed.
#[derive(Clone, Debug, Serialize)]
pub struct TimingRow {
    /// The backend's name.
    pub name: String,
    /// Mean time per input.
    pub mean_s: Option<f64>,
    /// Median time per input.
    pub median_s: Option<f64>,
    /// Standard error of the mean over the mean.
    pub rel_error: Option<f64>,
    /// Timed repetitions.
    pub reps: Option<usize>,
    /// The error, when the backend failed on this shape.
    pub error: Option<String>,
}

impl TimingRow {
    fn new(name: &str, timing: &Result<BenchTiming, String>) -> Self {
        let t = timing.as_ref().ok();
        Self {
            name: name.to_string(),
            mean_s: t.map(|t| t.mean.as_secs_f64()),
            median_s: t.map(|t| t.median.as_secs_f64()),
            rel_error: t.map(|t| t.rel_error),
            reps: t.map(|t| t.reps),
            error: timing.as_ref().err().cloned(),
        }
    }
}

/// One shape as printed and written to JSON.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// `BATCHxN`.
    pub shape: String,
    /// Inputs in the timed list.
    pub inputs: usize,
    /// Our backend.
    pub ours: TimingRow,
    /// Each peer, in `--peers` order.
    pub peers: Vec<TimingRow>,
    /// The fastest peer by mean time.
    pub best_peer: Option<String>,
    /// Best peer's mean time over ours (`> 1`: we are faster).
    pub ratio: Option<f64>,
    /// The worst value of each metric of the operation's gate over our outputs.
    pub metrics: Vec<MetricRow>,
    /// Every output of ours met the bar.
    pub meets_bar: bool,
    /// Every output of ours passed the contract's gate.
    pub passes_gate: bool,
}

impl BenchRow {
    /// Fills in the best peer and the ratio from the timings.
    fn rank(&mut self) {
        let best = self
            .peers
            .iter()
            .filter_map(|p| p.mean_s.map(|t| (p, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        self.best_peer = best.map(|(p, _)| p.name.clone());
        self.ratio = match (best, self.ours.mean_s) {
            (Some((_, peer)), Some(ours)) if ours > 0.0 => Some(peer / ours),
            _ => None,
        };
    }
}

#[derive(Debug, Serialize)]
struct BenchReport<'a> {
    op: String,
    backend: &'a str,
    reason: &'a str,
    case: String,
    cond: f64,
    seed: u64,
    rows: &'a [BenchRow],
    geomean_ratio: f64,
}

/// Runs `qr bench`.
pub fn run(args: &BenchArgs) -> Result<Outcome, CliError> {
    let opts = args.timing.run_options(None)?;
    let specs = args
        .shapes
        .iter()
        .map(|s| {
            let spec = Spec {
                batch: s.batch,
                n: s.n,
                cond: args.cond,
                case: args.case,
            };
            spec.shape().map(|_| spec)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let op = args.op.operation();
    let (selected, peers) = backends(args)?;
    println!("backend: {}", selected.reason);
    println!("ours times: {}", peers::from_reflectors(op));
    for p in &peers {
        println!("peer {}: {}", p.name(), p.backend.describe());
        println!("peer {} times: {}", p.name(), p.times(op));
    }
    println!(
        "op {op}, case {}, cond {}, seed {}; time per input, ratio = best peer / ours (> 1: ours is faster)",
        args.case, args.cond, opts.seed
    );
    let metrics = Metric::of(op);
    let names: Vec<String> = metrics
        .iter()
        .map(|m| format!("worst {}", m.name()))
        .collect();
    let mut columns: Vec<(&str, usize)> = vec![("shape", 10), ("inputs", 6), ("ours", 11)];
    columns.extend(peers.iter().map(|p| (p.name(), 11)));
    columns.push(("ratio", 7));
    columns.extend(names.iter().map(|n| (n.as_str(), 9)));
    columns.push(("bar", 4));
    let table = Table::new(&columns);
    println!("{}", table.header());
    let bar = progress::bar(specs.len() * (1 + peers.len()));
    let mut rows = Vec::with_capacity(specs.len());
    for spec in &specs {
        let row = bench_shape(op, spec, &selected, &peers, &opts, &bar)?;
        progress::println(&bar, &table.row(&cells(&row)));
        rows.push(row);
    }
    bar.finish_and_clear();
    let geomean_ratio = geomean(rows.iter().filter_map(|r| r.ratio));
    println!(
        "geometric mean of ratios over {} shapes: {}",
        rows.iter().filter(|r| r.ratio.is_some()).count(),
        fmt_ratio(geomean_ratio)
    );
    let all_meet_bar = rows.iter().all(|r| r.meets_bar);
    if !all_meet_bar {
        println!("some output of ours misses the bar (sfr <= 5, orth <= 25)");
    }
    if let Some(path) = &args.json {
        let report = BenchReport {
            op: op.to_string(),
            backend: selected.backend.name(),
            reason: &selected.reason,
            case: args.case.to_string(),
            cond: args.cond,
            seed: opts.seed,
            rows: &rows,
            geomean_ratio,
        };
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .map_err(|e| CliError(format!("writing {}: {e}", path.display())))?;
    }
    Ok(Outcome::from_bar(all_meet_bar))
}

/// Our backend and the peers `args` ask for.
fn backends(args: &BenchArgs) -> Result<(Selected, Vec<Peer>), CliError> {
    let defaults = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match args.backend {
        BenchBackend::Cpu => {
            if args.plan.is_some() {
                return Err(CliError(
                    "--plan forces a GPU strategy; use --backend gpu".into(),
                ));
            }
            let names = if args.peers.is_empty() {
                defaults(peers::CPU_DEFAULT)
            } else {
                args.peers.clone()
            };
            let cpu = CpuBackend::new();
            let selected = Selected {
                reason: cpu.describe(),
                backend: Box::new(cpu),
            };
            Ok((selected, peers::cpu_peers(&names)?))
        }
        BenchBackend::Gpu => {
            let strategy = args.plan.as_deref().map(parse_strategy).transpose()?;
            let names = if args.peers.is_empty() {
                defaults(peers::GPU_DEFAULT)
            } else {
                args.peers.clone()
            };
            Ok((gpu(strategy)?, peers::gpu_peers(&names)?))
        }
    }
}

/// Gates and times ours, then times every peer, on one shape's list.
fn bench_shape(
    op: Operation,
    spec: &Spec,
    ours: &Selected,
    peers: &[Peer],
    opts: &qr_verify::RunOptions,
    bar: &indicatif::ProgressBar,
) -> Result<BenchRow, CliError> {
    let shape = spec.shape()?;
    let label = format!("{}x{}", spec.batch, spec.n);
    bar.set_message(format!("{label}: generating"));
    let list = input_list(spec, opts)?;
    let views: Vec<&[f32]> = list.iter().map(Vec::as_slice).collect();
    bar.set_message(format!("{label}: gating {}", ours.backend.name()));
    let mut report = OpReport::new(Metric::of(op));
    for (i, a) in list.iter().enumerate() {
        // Seeded as `qr suite` seeds it, so both gate the same products.
        let seed = c_seed(input_seed(opts.seed, i));
        report.extend(gate_op(ours.backend.as_ref(), op, shape, a, seed)?);
    }
    bar.set_message(format!("{label}: timing {}", ours.backend.name()));
    let ours_timing = ours
        .backend
        .bench_op(op, shape, &views, &opts.bench)
        .map_err(|e| e.to_string());
    bar.inc(1);
    let mut peer_rows = Vec::with_capacity(peers.len());
    for peer in peers {
        bar.set_message(format!("{label}: timing {}", peer.name()));
        let timing = peer
            .backend
            .bench_op(op, shape, &views, &opts.bench)
            .map_err(|e| e.to_string());
        if let Err(e) = &timing {
            progress::println(bar, &format!("{label}: peer {} failed: {e}", peer.name()));
        }
        peer_rows.push(TimingRow::new(peer.name(), &timing));
        bar.inc(1);
    }
    // Our own failure to run is an error of the command, not a table cell.
    let ours_timing = ours_timing.map_err(CliError)?;
    let mut row = BenchRow {
        shape: label,
        inputs: list.len(),
        ours: TimingRow::new(ours.backend.name(), &Ok(ours_timing)),
        peers: peer_rows,
        best_peer: None,
        ratio: None,
        metrics: report
            .metrics
            .iter()
            .map(|&m| MetricRow {
                name: m.name(),
                worst: report.worst(m),
                bar: m.bar(),
            })
            .collect(),
        meets_bar: report.meets_bar(),
        passes_gate: report.passes_gate(),
    };
    row.rank();
    Ok(row)
}

fn cells(row: &BenchRow) -> Vec<String> {
    let time = |t: &TimingRow| {
        t.mean_s.map_or_else(
            || "failed".into(),
            |s| fmt_time(std::time::Duration::from_secs_f64(s)),
        )
    };
    let mut cells = vec![row.shape.clone(), row.inputs.to_string(), time(&row.ours)];
    cells.extend(row.peers.iter().map(time));
    cells.push(row.ratio.map_or_else(|| "-".into(), fmt_ratio));
    cells.extend(row.metrics.iter().map(|m| fmt_gate(m.worst)));
    cells.push(verdict(row.passes_gate, row.meets_bar).into());
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(name: &str, mean: Option<f64>) -> TimingRow {
        TimingRow {
            name: name.into(),
            mean_s: mean,
            median_s: mean,
            rel_error: mean.map(|_| 0.01),
            reps: mean.map(|_| 3),
            error: mean.is_none().then(|| "no device".into()),
        }
    }

    #[test]
    fn shapes_parse_as_batch_x_n() {
        assert_eq!(
            "40x176".parse::<ShapeArg>().unwrap(),
            ShapeArg { batch: 40, n: 176 }
        );
        assert_eq!(
            " 1x2048".parse::<ShapeArg>().unwrap(),
            ShapeArg { batch: 1, n: 2048 }
        );
        for bad in ["40", "x176", "40x", "40*176", "-1x3", "4x4x4"] {
            assert!(bad.parse::<ShapeArg>().is_err(), "{bad}");
        }
    }

    #[test]
    fn shapes_whose_byte_counts_overflow_are_errors() {
        let max = usize::MAX;
        for bad in [
            format!("1x{max}"),
            format!("{max}x0"),
            format!("2x{}", 1usize << 31),
            format!("{}x1", 1usize << 62),
        ] {
            let e = bad.parse::<ShapeArg>().unwrap_err();
            assert!(e.0.contains("does not fit"), "{bad}: {e}");
        }
        let edge = format!("{}x0", (isize::MAX as usize) / 4);
        assert!(edge.parse::<ShapeArg>().is_ok(), "{edge}");
    }

    #[test]
    fn ratio_is_best_peer_over_ours() {
        let mut row = BenchRow {
            shape: "2x8".into(),
            inputs: 1,
            ours: timing("cpu", Some(2.0)),
            peers: vec![
                timing("a", Some(8.0)),
                timing("b", Some(5.0)),
                timing("c", None),
            ],
            best_peer: None,
            ratio: None,
            metrics: vec![
                MetricRow {
                    name: "sfr".into(),
                    worst: 0.1,
                    bar: 5.0,
                },
                MetricRow {
                    name: "orth".into(),
                    worst: 0.2,
                    bar: 25.0,
                },
            ],
            meets_bar: true,
            passes_gate: true,
        };
        row.rank();
        assert_eq!(row.best_peer.as_deref(), Some("b"));
        assert_eq!(row.ratio, Some(2.5));
        let c = cells(&row);
        assert_eq!(c[2], "2.000 s");
        assert_eq!(c[5], "failed");
        assert_eq!(c[6], "2.50x");
        row.peers.iter_mut().for_each(|p| p.mean_s = None);
        row.rank();
        assert_eq!((row.best_peer, row.ratio), (None, None));
    }
}
