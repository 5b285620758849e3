"""Shared inputs: a shrunken preset that garbage-collects within a few thousand
requests, the sample traces beside the repository, and the release CLI binary
(scripts/test builds it before pytest runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT.parent / "shared" / "traces"

#: hat-table4 shrunk to 64 blocks per plane (512 MiB): GC starts within a few thousand writes.
CONFIG = "hat-table4"
SMALL = {"geometry.blocks_per_plane": 64}
WORKLOAD = "rw=randwrite,bs=4k,ios=20000"
PRECONDITION = "fill=1.0,overwrite=0.5"


def sample(rel: str) -> Path:
    assert TRACES.is_dir(), f"sample traces folder {TRACES} is missing (shared/traces beside the repository)"
    p = TRACES / rel
    assert p.is_file(), f"sample trace {p} is missing"
    return p


@pytest.fixture(scope="session")
def cli() -> Path:
    exe = ROOT / "target" / "release" / "ftlsim"
    assert exe.is_file(), f"{exe} is missing: run `cargo build --release -p ftlsim-cli` (scripts/test does)"
    return exe


def run_cli(exe: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FTLSIM_PYTHON": sys.executable}
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=600)
    assert "panicked" not in out.stderr, out.stderr
    if check:
        assert out.returncode == 0, f"ftlsim {' '.join(args)} failed:\n{out.stderr}"
    return out
