"""Shared inputs: a shrunken preset that garbage-collects within a few thousand
requests, the sample traces (kept in tests/traces; the real ones beside the
repository when present) and the CLI binary of the test profile (`cargo test`
builds it in target/debug before scripts/test runs pytest)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "traces"
REAL = Path(os.environ.get("FTLSIM_REAL_TRACES", ROOT.parent / "shared" / "traces"))

#: hat-table4 shrunk to 64 blocks per plane (512 MiB): GC starts within a few thousand writes.
CONFIG = "hat-table4"
SMALL = {"geometry.blocks_per_plane": 64}
WORKLOAD = "rw=randwrite,bs=4k,ios=20000"
PRECONDITION = "fill=1.0,overwrite=0.5"


def sample(rel: str) -> Path:
    """A small sample trace kept in the repository."""
    p = KEPT / rel
    assert p.is_file(), f"kept sample trace {p} is missing"
    return p


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def real(rel: str) -> Path:
    """A real trace from shared/traces: skips the test when the folder is absent, fails under CI."""
    if not REAL.is_dir():
        assert not in_ci(), f"real traces folder {REAL} is missing, and CI requires it"
        pytest.skip("real traces not present")
    p = REAL / rel
    assert p.is_file(), f"real trace {p} is missing"
    return p


@pytest.fixture(scope="session")
def cli() -> Path:
    exe = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug" / "ftlsim"
    assert exe.is_file(), f"{exe} is missing: run `cargo test --workspace` (scripts/test does)"
    return exe


def run_cli(exe: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FTLSIM_PYTHON": sys.executable}
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=600)
    assert "panicked" not in out.stderr, out.stderr
    if check:
        assert out.returncode == 0, f"ftlsim {' '.join(args)} failed:\n{out.stderr}"
    return out
