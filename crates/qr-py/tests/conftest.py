"""Shared configuration: the report header says which peers are present."""

import importlib.util


def _version(name: str) -> str:
    if importlib.util.find_spec(name) is None:
        return "absent"
    try:
        return __import__(name).__version__
    except Exception as e:  # an installed but broken package
        return f"not importable ({e})"


def pytest_report_header(config):
    import qr_rs

    torch = _version("torch")
    scipy = _version("scipy")
    return [
        f"qr_rs backend: {qr_rs.backend()}",
        f"torch: {torch}"
        + ("" if torch[0].isdigit() else " (the torch comparisons are skipped)"),
        f"scipy: {scipy}"
        + ("" if scipy[0].isdigit() else " (the sorgqr/sormqr comparisons are skipped)"),
    ]
