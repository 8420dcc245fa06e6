//! Runs the `qr` binary on tiny cases and checks its output and exit status.

use std::process::{Command, Output};

fn qr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qr"))
        .args(args)
        .output()
        .expect("the qr binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn assert_status(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn check_prints_one_row_per_matrix() {
    let o = qr(&[
        "check",
        "--spec",
        "3,24,1,dense",
        "--backend",
        "cpu",
        "--oracle",
    ]);
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("backend: "), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<usize>().is_ok())
        })
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows.iter().all(|r| r.contains("pass")), "{out}");
    assert!(out.contains("every matrix meets the bar"), "{out}");
}

#[test]
fn suite_runs_a_filtered_capped_case_and_writes_json() {
    let dir = std::env::temp_dir().join(format!("qr-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("suite.json");
    let o = qr(&[
        "suite",
        "--backend",
        "cpu",
        "--filter",
        "20,32,1,dense",
        "--max-batch",
        "2",
        "--max-inputs",
        "2",
        "--budget",
        "0.05",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_status(&o, 0);
    let out = stdout(&o);
    let row = out
        .lines()
        .find(|l| l.starts_with("20,32,1,dense"))
        .unwrap_or_else(|| panic!("no row for the case:\n{out}"));
    assert!(row.contains("2 of 20") && row.ends_with("pass"), "{row}");
    assert!(out.contains("capped by --max-batch"), "{out}");
    assert!(
        out.lines()
            .last()
            .unwrap()
            .contains("every case meets the bar"),
        "{out}"
    );

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["spec"], "20,32,1,dense");
    assert_eq!(rows[0]["batch_run"], 2);
    assert_eq!(rows[0]["inputs"], 2);
    assert_eq!(rows[0]["meets_bar"], true);
    assert!(rows[0]["worst_sfr"].as_f64().unwrap() <= 5.0);
    assert!(report["geomean_mean_s"].as_f64().unwrap() > 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_times_ours_and_the_peers() {
    let o = qr(&[
        "bench",
        "--backend",
        "cpu",
        "--shapes",
        "2x16,1x40",
        "--peers",
        "faer-batch,nalgebra",
        "--max-inputs",
        "1",
        "--budget",
        "0.05",
    ]);
    assert_status(&o, 0);
    let out = stdout(&o);
    let header = out.lines().find(|l| l.starts_with("shape")).unwrap();
    assert!(
        header.contains("faer-batch") && header.contains("nalgebra-batch"),
        "{out}"
    );
    for shape in ["2x16", "1x40"] {
        let row = out.lines().find(|l| l.starts_with(shape)).unwrap();
        assert!(row.ends_with("pass") && row.contains('x'), "{row}");
    }
    assert!(
        out.contains("geometric mean of ratios over 2 shapes"),
        "{out}"
    );
}

#[test]
fn plan_answers_with_or_without_a_device() {
    let o = qr(&["plan", "--n", "64", "--batch", "4"]);
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(
        out.starts_with("no GPU to plan for") || out.contains("plan for 4x64x64"),
        "{out}"
    );
}

#[test]
fn misuse_exits_with_status_2() {
    // No case matches the filter.
    assert_status(
        &qr(&["suite", "--backend", "cpu", "--filter", "no-such-case"]),
        2,
    );
    // An empty case field is not a spec.
    assert_status(&qr(&["check", "--spec", "16,512,0,"]), 2);
    // A GPU strategy on the CPU.
    assert_status(
        &qr(&[
            "check",
            "--spec",
            "1,4,1,dense",
            "--backend",
            "cpu",
            "--plan",
            "x",
        ]),
        2,
    );
    // Shapes are BATCHxN.
    assert_status(&qr(&["bench", "--backend", "cpu", "--shapes", "16"]), 2);
    // A shape whose byte count overflows is refused while parsing, not run.
    let o = qr(&["bench", "--backend", "cpu", "--shapes", "2x4294967296"]);
    assert_status(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("does not fit"), "{err}");
}
