"""``python -m qr_rs.bench``: a quick run in a subprocess writes a JSON row
per (shape, op), every one gated and passing; the bench's own generator and
float64 gate agree with the suite's (``qr_reference``)."""

import json
import subprocess
import sys

import numpy as np
import pytest
import qr_rs
from qr_reference import CASES, generate, geqrf_gate, orth, qerr, recon
from qr_rs import bench


def test_quick_run_writes_a_passing_row_per_shape_and_op(tmp_path):
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "qr_rs.bench", "--quick", "--shapes", "20x32,40x176"]
    cmd += ["--budget", "0.2", "--json", str(out)]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    rows = result["rows"]
    keys = sorted((r["shape"], r["op"]) for r in rows)
    assert keys == sorted((s, op) for s in ("20x32", "40x176") for op in ("geqrf", "orgqr", "qr"))
    for r in rows:
        assert r["batch"] <= 4 and r["case"] == "dense"
        assert r["gate_pass"] is True, r
        assert r["gate"] and all(np.isfinite(v) for v in r["gate"].values()), r
        assert r["qr_rs_s"] > 0 and r["qr_rs_reps"] >= 1, r
        if r["peer_s"] is not None:
            assert r["ratio"] == pytest.approx(r["peer_s"] / r["qr_rs_s"])
    # qr always has a peer: torch.linalg.qr, else numpy.linalg.qr.
    assert all(r["peer_s"] for r in rows if r["op"] == "qr")
    assert result["meta"]["device"] == "cpu" and result["meta"]["quick"] is True
    assert "gate: all 6 results pass" in done.stdout


def test_a_seed_is_timed_beside_geqrf(tmp_path):
    # A stand-in for the anchor script: its load_seed hands back a module
    # whose custom_kernel is qr_rs's own geqrf.
    anchor = tmp_path / "anchor.py"
    anchor.write_text(
        "import types, qr_rs\n"
        "def load_seed(path):\n"
        "    assert path == 'seed.txt'\n"
        "    return types.SimpleNamespace(custom_kernel=lambda a: tuple(qr_rs.geqrf(a)))\n"
    )
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "qr_rs.bench", "--quick", "--shapes", "20x32", "--ops", "geqrf"]
    cmd += ["--budget", "0.05", "--seed", "seed.txt", "--seed-anchor", str(anchor)]
    cmd += ["--json", str(out)]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(out.read_text())["rows"]
    assert row["seed_s"] > 0 and row["seed_gate"]["sfr"] <= 5, row
    assert row["seed_ratio"] == pytest.approx(row["seed_s"] / row["qr_rs_s"])
    assert "; seed " in done.stdout


def test_filters_are_checked():
    with pytest.raises(SystemExit):
        bench.parse_args(["--shapes", "3x3"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--ops", "lu"])
    args = bench.parse_args(["--shapes", "640x512", "--ops", "qr,householder_product"])
    assert args.ops == ["qr", "orgqr"]
    assert {c[3] for c in args.cases} == {
        "dense",
        "mixed",
        "rankdef",
        "clustered",
        "rowscale",
        "nearcollinear",
    }


@pytest.mark.parametrize("case", CASES)
def test_generator_matches_the_suites(case):
    for batch, n, cond in [(5, 40, 2.0), (2, 7, 0.0)]:
        want = generate(case, batch, n, cond, seed=batch * 1000 + n)
        np.testing.assert_array_equal(bench.generate(case, batch, n, cond, batch * 1000 + n), want)


@pytest.mark.parametrize("case", ["dense", "rankdef", "clustered", "mixed"])
def test_gate_matches_the_suites(case):
    a = generate(case, 3, 70, 2.0, seed=1)  # two blocks of 32 and a ragged one
    h, tau = qr_rs.geqrf(a)
    g = bench.gate("geqrf", a, [h, tau])["values"]
    sfr, orth_ = geqrf_gate(a, h, tau)
    assert g["sfr"] == pytest.approx(sfr.max(), rel=1e-6, abs=1e-9)
    assert g["orth"] == pytest.approx(orth_.max(), rel=1e-6, abs=1e-9)
    q = qr_rs.householder_product(h, tau)
    g = bench.gate("orgqr", a, [q, h, tau])["values"]
    assert g["qerr"] == pytest.approx(qerr(q, h, tau).max(), rel=1e-6, abs=1e-9)
    q, r = qr_rs.qr(a)
    g = bench.gate("qr", a, [q, r])["values"]
    assert g["recon"] == pytest.approx(recon(a, q, r).max(), rel=1e-6, abs=1e-9)
    assert g["orth"] == pytest.approx(orth(q).max(), rel=1e-6, abs=1e-9)


def test_a_wrong_result_fails_the_gate():
    a = generate("dense", 2, 16, 1.0)
    q, r = qr_rs.qr(a)
    r = r.copy()
    r[1, 0, 5] += 1e-3
    g = bench.gate("qr", a, [q, r])
    assert not g["gate_pass"] and not g["bar_pass"]
