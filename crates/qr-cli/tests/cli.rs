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
    assert_eq!(report["op"], "geqrf");
    assert_eq!(rows[0]["metrics"][0]["name"], "sfr");
    assert_eq!(rows[0]["metrics"][1]["bar"], 25.0);
    assert_eq!(rows[0]["not_measured"], 0);
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
fn suite_runs_every_operation_with_its_metrics() {
    for (op, columns) in [
        ("geqrf", &["worst sfr", "worst orth"][..]),
        ("orgqr", &["worst qerr", "worst orth"][..]),
        (
            "ormqr",
            &["worst Q C", "worst Q^T C", "worst C Q", "worst C Q^T"][..],
        ),
        (
            "qr",
            &["worst recon", "worst orth", "worst qerr", "worst split"][..],
        ),
    ] {
        let o = qr(&[
            "suite",
            "--backend",
            "cpu",
            "--op",
            op,
            "--filter",
            "20,32,1,dense",
            "--max-batch",
            "3",
            "--max-inputs",
            "2",
            "--budget",
            "0.05",
        ]);
        assert_status(&o, 0);
        let out = stdout(&o);
        assert!(out.contains(&format!(", op {op}")), "{out}");
        let header = out.lines().find(|l| l.starts_with("case")).unwrap();
        for c in columns {
            assert!(header.contains(c), "{op}: {header}");
        }
        let row = out
            .lines()
            .find(|l| l.starts_with("20,32,1,dense"))
            .unwrap();
        assert!(row.contains("3 of 20") && row.ends_with("pass"), "{row}");
        // One number per metric between the timing and the verdict.
        let cells: Vec<&str> = row.split_whitespace().collect();
        let gates = &cells[cells.len() - 1 - columns.len()..cells.len() - 1];
        assert!(
            gates
                .iter()
                .all(|g| g.parse::<f64>().is_ok_and(|v| v <= 5.0)),
            "{op}: {row}"
        );
    }
}

#[test]
fn bench_times_a_q_operation_and_says_what_peers_time() {
    let o = qr(&[
        "bench",
        "--backend",
        "cpu",
        "--op",
        "orgqr",
        "--shapes",
        "2x16",
        "--peers",
        "faer-batch,nalgebra",
        "--max-inputs",
        "1",
        "--budget",
        "0.05",
    ]);
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("ours times: orgqr of its own geqrf's (H, tau)"),
        "{out}"
    );
    assert!(
        out.contains("peer nalgebra-batch times: q() of its own QR"),
        "{out}"
    );
    let header = out.lines().find(|l| l.starts_with("shape")).unwrap();
    assert!(header.contains("worst qerr"), "{header}");
    let row = out.lines().find(|l| l.starts_with("2x16")).unwrap();
    assert!(row.ends_with("pass") && row.contains('x'), "{row}");
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
fn plan_on_a_modelled_board_needs_no_device() {
    let args = [
        "plan",
        "--n",
        "512",
        "--batch",
        "640",
        "--device-model",
        "h200",
    ];
    let o = qr(&args);
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("H200") && out.contains("modelled"), "{out}");
    assert!(
        out.contains("plan for 640x512x512: blocked (chosen)"),
        "{out}"
    );
    assert!(
        out.contains("launches: blocked: meeting Alone; panel Registers"),
        "{out}"
    );
    let o = qr(&[
        "plan",
        "--n",
        "1024",
        "--batch",
        "60",
        "--device-model",
        "h100",
        "--op",
        "orgqr",
    ]);
    assert_status(&o, 0);
    assert!(stdout(&o).contains("orgqr for 60x1024x1024"));
    assert_status(
        &qr(&["plan", "--n", "4", "--batch", "1", "--device-model", "v100"]),
        2,
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
    // An operation that does not exist, in either command: clap names the
    // value and the ones it accepts.
    for cmd in [
        &["suite", "--backend", "cpu", "--op", "geqr"][..],
        &[
            "bench",
            "--backend",
            "cpu",
            "--shapes",
            "1x4",
            "--op",
            "householder",
        ][..],
    ] {
        let o = qr(cmd);
        assert_status(&o, 2);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("invalid value")
                && err.contains("[possible values: geqrf, orgqr, ormqr, qr]"),
            "{err}"
        );
    }
    // A shape whose byte count overflows is refused while parsing, not run.
    let o = qr(&["bench", "--backend", "cpu", "--shapes", "2x4294967296"]);
    assert_status(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("does not fit"), "{err}");
}
