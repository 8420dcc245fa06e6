//! `qr suite`: the `qr_v2` test or benchmark set, one row per case, for
//! `geqrf` or one of the `Q` operations.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use qr_core::{ApplyQ, Operation};
use qr_verify::{CaseResult, Metric, Set, Spec, geomean, run_case, run_spec};
use serde::Serialize;

use crate::error::{CliError, Outcome};
use crate::inputs::TimingOpts;
use crate::progress;
use crate::select::{BackendOpts, select};
use crate::table::{Table, fmt_gate, fmt_seconds, fmt_time};

/// The operation `--op` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OpArg {
    /// `A -> (H, tau)`: gated by `sfr` and `orth`.
    Geqrf,
    /// `(H, tau) -> Q` from our own `geqrf`: gated by `qerr` and `orth` of `Q`.
    Orgqr,
    /// `op(Q) C`: gated for `Q C`, `Q^T C`, `C Q` and `C Q^T` with a random
    /// `n x n` `C`; timed for `Q^T C` with `C` the input.
    Ormqr,
    /// `A -> (Q, R)`: gated by `recon`, `orth` and `qerr`, and `split` (entries
    /// not bit for bit `geqrf` then `orgqr`, which must be 0).
    Qr,
}

impl OpArg {
    /// The operation run, gated and timed.
    pub fn operation(self) -> Operation {
        match self {
            OpArg::Geqrf => Operation::Geqrf,
            OpArg::Orgqr => Operation::Orgqr,
            // The projection Q^T C is the product most callers time (torch's
            // ormqr(left=True, transpose=True)); the gate covers all four.
            OpArg::Ormqr => Operation::Ormqr(ApplyQ::QT_LEFT),
            OpArg::Qr => Operation::Qr,
        }
    }
}

/// Arguments of `qr suite`.
#[derive(Clone, Debug, Args)]
pub struct SuiteArgs {
    /// Which set: `tests` (22 correctness cases) or `benchmarks` (the 14 ranked ones).
    #[arg(long, default_value = "tests")]
    pub set: Set,
    /// The operation to run, gate and time.
    #[arg(long, value_enum, default_value_t = OpArg::Geqrf)]
    pub op: OpArg,
    #[command(flatten)]
    pub backend: BackendOpts,
    /// Run at most N matrices of each case; capped cases are marked `N of B`.
    #[arg(long, value_name = "N")]
    pub max_batch: Option<usize>,
    /// Run only the cases whose spec (`batch,n,cond,case`) contains SUBSTR.
    #[arg(long, value_name = "SUBSTR")]
    pub filter: Option<String>,
    /// Also write the rows as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub timing: TimingOpts,
}

/// One case as printed and as written to JSON (times in seconds per input).
#[derive(Clone, Debug, Serialize)]
pub struct SuiteRow {
    /// The case, `batch,n,cond,case`.
    pub spec: String,
    /// The spec's batch.
    pub batch: usize,
    /// Matrices per input actually run.
    pub batch_run: usize,
    /// Whether `--max-batch` cut the batch.
    pub capped: bool,
    /// Inputs in the timed list.
    pub inputs: usize,
    /// Mean time per input.
    pub mean_s: f64,
    /// Median time per input.
    pub median_s: f64,
    /// Standard error of the mean over the mean (`null` with one repetition).
    pub rel_error: f64,
    /// Timed repetitions.
    pub reps: usize,
    /// The clock that measured it.
    pub clock: &'static str,
    /// Largest `sfr` over every matrix of every input (`geqrf` only).
    pub worst_sfr: Option<f64>,
    /// Largest `orth` over every matrix of every input (not for `ormqr`).
    pub worst_orth: Option<f64>,
    /// Every metric of the operation's gate, worst over every matrix.
    pub metrics: Vec<MetricRow>,
    /// Matrices with a non-OK `info`, not measured (each misses the bar).
    pub not_measured: usize,
    /// Every matrix within the contract's gate (`sfr <= 20`, `orth <= 100`).
    pub passes_gate: bool,
    /// Every matrix within the project's bar (`sfr <= 5`, `orth <= 25`).
    pub meets_bar: bool,
}

/// One metric of a row: its worst value and the bar it is held to.
#[derive(Clone, Debug, Serialize)]
pub struct MetricRow {
    /// The metric's name (`sfr`, `qerr`, `Q^T C`, ...).
    pub name: String,
    /// Largest value over every measured matrix.
    pub worst: f64,
    /// The project's bar for it.
    pub bar: f64,
}

impl From<&CaseResult> for SuiteRow {
    fn from(r: &CaseResult) -> Self {
        let has = |m: Metric| r.report.metrics.contains(&m);
        Self {
            spec: r.spec.to_string(),
            batch: r.spec.batch,
            batch_run: r.batch_run,
            capped: r.capped,
            inputs: r.inputs,
            mean_s: r.timing.mean.as_secs_f64(),
            median_s: r.timing.median.as_secs_f64(),
            rel_error: r.timing.rel_error,
            reps: r.timing.reps,
            clock: r.timing.clock,
            worst_sfr: has(Metric::Sfr).then(|| r.report.worst(Metric::Sfr)),
            worst_orth: has(Metric::Orth).then(|| r.report.worst(Metric::Orth)),
            metrics: r
                .report
                .metrics
                .iter()
                .map(|&m| MetricRow {
                    name: m.name(),
                    worst: r.report.worst(m),
                    bar: m.bar(),
                })
                .collect(),
            not_measured: r.report.not_measured(),
            passes_gate: r.report.passes_gate(),
            meets_bar: r.report.meets_bar(),
        }
    }
}

/// The whole run as `--json` writes it.
#[derive(Debug, Serialize)]
struct SuiteReport<'a> {
    set: String,
    op: String,
    backend: String,
    reason: &'a str,
    seed: u64,
    max_batch: Option<usize>,
    rows: &'a [SuiteRow],
    geomean_mean_s: f64,
    geomean_median_s: f64,
    all_meet_bar: bool,
}

/// The columns for `metrics`: the case and its timing, the worst value of
/// each metric, the verdict.
fn table(metrics: &[Metric]) -> Table {
    let names: Vec<String> = metrics
        .iter()
        .map(|m| format!("worst {}", m.name()))
        .collect();
    let mut columns: Vec<(&str, usize)> = vec![
        ("case", 24),
        ("batch", 10),
        ("inputs", 6),
        ("mean", 11),
        ("median", 11),
        ("+-", 6),
    ];
    columns.extend(names.iter().map(|n| (n.as_str(), 9)));
    columns.push(("bar", 8));
    Table::new(&columns)
}

/// The row's cells in [`table`]'s order.
fn cells(row: &SuiteRow) -> Vec<String> {
    let batch = if row.capped {
        format!("{} of {}", row.batch_run, row.batch)
    } else {
        row.batch_run.to_string()
    };
    let rel = if row.rel_error.is_finite() {
        format!("{:.1}%", 100.0 * row.rel_error)
    } else {
        "-".into()
    };
    let mut cells = vec![
        row.spec.clone(),
        batch,
        row.inputs.to_string(),
        fmt_seconds(row.mean_s),
        fmt_seconds(row.median_s),
        rel,
    ];
    cells.extend(row.metrics.iter().map(|m| fmt_gate(m.worst)));
    cells.push(verdict(row.passes_gate, row.meets_bar).into());
    cells
}

/// `pass` within the bar, `gate` within the contract's gate only, `FAIL` otherwise.
pub fn verdict(passes_gate: bool, meets_bar: bool) -> &'static str {
    match (passes_gate, meets_bar) {
        (_, true) => "pass",
        (true, false) => "gate",
        (false, false) => "FAIL",
    }
}

/// The set's cases whose spec contains `filter` (all without one).
pub fn select_specs(set: Set, filter: Option<&str>) -> Result<Vec<Spec>, CliError> {
    let specs: Vec<Spec> = set
        .specs()
        .into_iter()
        .filter(|s| filter.is_none_or(|f| s.to_string().contains(f)))
        .collect();
    if specs.is_empty() {
        return Err(CliError(format!(
            "--filter {:?} matches no case of the {set} set",
            filter.unwrap_or_default()
        )));
    }
    Ok(specs)
}

/// Runs `qr suite`.
pub fn run(args: &SuiteArgs) -> Result<Outcome, CliError> {
    let specs = select_specs(args.set, args.filter.as_deref())?;
    let opts = args.timing.run_options(args.max_batch)?;
    let op = args.op.operation();
    let metrics = Metric::of(op);
    let selected = select(&args.backend)?;
    println!("backend: {}", selected.reason);
    let bars: Vec<String> = metrics
        .iter()
        .map(|m| format!("{} <= {}", m.name(), m.bar()))
        .collect();
    println!(
        "set: {} ({} cases), op {op}, seed {}, bar: {}",
        args.set,
        specs.len(),
        opts.seed,
        bars.join(", ")
    );
    // Kernels are compiled up front, on every core, rather than one at a
    // time as each case first needs them.
    let shapes = specs
        .iter()
        .map(|s| run_spec(s, &opts).shape())
        .collect::<Result<Vec<_>, _>>()?;
    selected.backend.prepare(&shapes)?;
    let table = table(&metrics);
    println!("{}", table.header());
    let bar = progress::bar(specs.len());
    let mut rows = Vec::with_capacity(specs.len());
    for spec in &specs {
        bar.set_message(spec.to_string());
        let result = run_case(selected.backend.as_ref(), op, spec, &opts)?;
        let row = SuiteRow::from(&result);
        progress::println(&bar, &table.row(&cells(&row)));
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let summary = summarize(&rows);
    for line in &summary.lines {
        println!("{line}");
    }
    if let Some(path) = &args.json {
        let report = SuiteReport {
            set: args.set.to_string(),
            op: op.to_string(),
            backend: selected.backend.name().to_string(),
            reason: &selected.reason,
            seed: opts.seed,
            max_batch: args.max_batch,
            rows: &rows,
            geomean_mean_s: summary.geomean_mean_s,
            geomean_median_s: summary.geomean_median_s,
            all_meet_bar: summary.all_meet_bar,
        };
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .map_err(|e| CliError(format!("writing {}: {e}", path.display())))?;
    }
    Ok(Outcome::from_bar(summary.all_meet_bar))
}

/// The closing lines of a run and the verdict they state.
#[derive(Debug)]
pub struct Summary {
    /// Printed after the table.
    pub lines: Vec<String>,
    /// Geometric mean of the mean times per input.
    pub geomean_mean_s: f64,
    /// Geometric mean of the median times per input.
    pub geomean_median_s: f64,
    /// Every case met the bar.
    pub all_meet_bar: bool,
}

/// The geometric means, the capped cases and the verdict over `rows`.
pub fn summarize(rows: &[SuiteRow]) -> Summary {
    let geomean_mean_s = geomean(rows.iter().map(|r| r.mean_s));
    let geomean_median_s = geomean(rows.iter().map(|r| r.median_s));
    let mut lines = vec![format!(
        "geometric mean of time per input over {}: mean {}, median {}",
        cases(rows.len()),
        fmt_time_or_dash(geomean_mean_s),
        fmt_time_or_dash(geomean_median_s)
    )];
    let capped: Vec<&str> = rows
        .iter()
        .filter(|r| r.capped)
        .map(|r| r.spec.as_str())
        .collect();
    if !capped.is_empty() {
        lines.push(format!(
            "capped by --max-batch ({}, times not comparable with the full batch): {}",
            cases(capped.len()),
            capped.join(" ")
        ));
    }
    let unmeasured: Vec<String> = rows
        .iter()
        .filter(|r| r.not_measured > 0)
        .map(|r| format!("{} ({})", r.spec, r.not_measured))
        .collect();
    if !unmeasured.is_empty() {
        lines.push(format!(
            "matrices with a non-OK info, not measured: {}",
            unmeasured.join(" ")
        ));
    }
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.meets_bar)
        .map(|r| r.spec.as_str())
        .collect();
    let all_meet_bar = missed.is_empty();
    lines.push(if all_meet_bar {
        format!("every case meets the bar ({})", cases(rows.len()))
    } else {
        format!(
            "{} of {} miss the bar: {}",
            missed.len(),
            cases(rows.len()),
            missed.join(" ")
        )
    });
    Summary {
        lines,
        geomean_mean_s,
        geomean_median_s,
        all_meet_bar,
    }
}

fn cases(count: usize) -> String {
    match count {
        1 => "1 case".into(),
        n => format!("{n} cases"),
    }
}

fn fmt_time_or_dash(s: f64) -> String {
    if s.is_finite() {
        fmt_time(std::time::Duration::from_secs_f64(s))
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(spec: &str, mean_s: f64, sfr: f64, capped: bool) -> SuiteRow {
        SuiteRow {
            spec: spec.into(),
            batch: 16,
            batch_run: if capped { 2 } else { 16 },
            capped,
            inputs: 1,
            mean_s,
            median_s: mean_s,
            rel_error: 0.005,
            reps: 3,
            clock: "host",
            worst_sfr: Some(sfr),
            worst_orth: Some(1.0),
            metrics: vec![
                MetricRow {
                    name: "sfr".into(),
                    worst: sfr,
                    bar: 5.0,
                },
                MetricRow {
                    name: "orth".into(),
                    worst: 1.0,
                    bar: 25.0,
                },
            ],
            not_measured: 0,
            passes_gate: sfr <= 20.0,
            meets_bar: sfr <= 5.0,
        }
    }

    #[test]
    fn summary_states_geomean_capped_and_misses() {
        let rows = [
            row("16,512,2,dense", 1e-3, 0.1, true),
            row("16,512,0,rankdef", 4e-3, 7.0, false),
        ];
        let s = summarize(&rows);
        assert!((s.geomean_mean_s - 2e-3).abs() < 1e-12);
        assert!(!s.all_meet_bar);
        assert!(s.lines[0].contains("mean 2.000 ms"));
        assert!(s.lines[1].contains("16,512,2,dense"));
        assert_eq!(s.lines[2], "1 of 2 cases miss the bar: 16,512,0,rankdef");
        let c = cells(&rows[0]);
        assert_eq!(c[1], "2 of 16");
        assert_eq!(c[5], "0.5%");
        assert_eq!(cells(&rows[1])[8], "gate");
        assert!(summarize(&rows[..1]).all_meet_bar);
        let unmeasured = SuiteRow {
            not_measured: 2,
            ..row("2,8,0,dense", 1e-3, 0.1, false)
        };
        let s = summarize(&[unmeasured]);
        assert_eq!(
            s.lines[1],
            "matrices with a non-OK info, not measured: 2,8,0,dense (2)"
        );
    }

    #[test]
    fn columns_follow_the_operation() {
        let header = table(&Metric::of(OpArg::Ormqr.operation())).header();
        for name in ["worst Q C", "worst Q^T C", "worst C Q", "worst C Q^T"] {
            assert!(header.contains(name), "{header}");
        }
        let header = table(&Metric::of(OpArg::Qr.operation())).header();
        assert!(header.contains("worst recon") && header.contains("worst split"));
        assert!(!header.contains("sfr"), "{header}");
    }

    #[test]
    fn verdicts() {
        assert_eq!(verdict(true, true), "pass");
        assert_eq!(verdict(true, false), "gate");
        assert_eq!(verdict(false, false), "FAIL");
    }

    #[test]
    fn filter_selects_by_substring() {
        let all = select_specs(Set::Tests, None).unwrap();
        assert_eq!(all.len(), 22);
        let mixed = select_specs(Set::Tests, Some("mixed")).unwrap();
        assert_eq!(mixed.len(), 3);
        let one = select_specs(Set::Benchmarks, Some("20,32,")).unwrap();
        assert_eq!(one.len(), 1);
        assert!(select_specs(Set::Tests, Some("no such case")).is_err());
    }
}
