#!/usr/bin/env bash
# Python binding overhead (issue 5). One command:  bash bench/python.sh
# The same 1,000,000-request closed-loop random-write workload on the same
# preconditioned 8-channel drive, run by the `ftlsim` CLI (one process, timed
# from outside) and by `ftlsim.run` (timed around the call). Five runs each,
# alternating; the minima (least disturbed by other load) are compared. ftlsim.run is measured both with
# its defaults (per-request latencies kept, 100 ms time series) and with the
# CLI's settings (neither), in this one process, and once per new interpreter
# ("fresh process", CLI settings).
# Needs the .venv that ./scripts/test builds (or FTLSIM_PYTHON with ftlsim installed).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${FTLSIM_PYTHON:-.venv/bin/python}
cargo build --release -q -p ftlsim-cli
"$py" bench/python_overhead.py target/release/ftlsim bench/page-8ch-16g.toml
