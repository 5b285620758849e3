"""``python -m ftlsim sweep|plot``: what the ``ftlsim sweep`` and ``ftlsim plot`` CLI subcommands run.

A sweep spec is a TOML file::

    config = "hat-table4"                 # preset, TOML path, or an inline table
    ftls = ["page"]
    workloads = ["rw=randwrite,bs=4k,ios=100000,iodepth=32"]
    traces = []                           # paths relative to the spec file
    seeds = [1, 2]
    precondition = "fill=1.0,overwrite=0.5"
    out = "sweep.parquet"                 # resumable; .csv also works
    snapshots = true                      # runs of one drive precondition once (snapshots/ beside out)
    snapshot_dir = "snaps"                # optional: where those snapshots go instead
    backend = "local"                     # or "ray" (address = "..." for a cluster)
    [set]                                 # fixed overrides
    "geometry.blocks_per_plane" = 64
    [grid]                                # swept keys
    overprovisioning = [0.07, 0.15, 0.28]
    "gc.policy" = ["greedy", "fifo"]

Errors print one ``ftlsim: error:`` line and exit 1, as the Rust CLI does.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

from ._sweep import sweep
from .errors import FtlsimError, SweepError, keyed

SPEC_KEYS = {
    "config",
    "ftls",
    "traces",
    "workloads",
    "seeds",
    "precondition",
    "format",
    "out",
    "backend",
    "address",
    "workers",
    "snapshots",
    "snapshot_dir",
    "set",
    "grid",
}


def load_spec(path: Path) -> dict[str, Any]:
    """Reads a sweep spec, naming the file and key of anything wrong; paths become relative to the spec."""
    try:
        spec = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise keyed(SweepError, "sweep", str(path), f"invalid TOML: {e}") from None
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise keyed(SweepError, "sweep", f"{path}: {unknown[0]}", f"unknown key; expected one of {sorted(SPEC_KEYS)}")
    here = path.parent
    for key in ("traces", "workloads", "ftls", "seeds"):
        if key in spec and not isinstance(spec[key], list):
            raise keyed(SweepError, "sweep", f"{path}: {key}", "must be a list")
    for key in ("set", "grid"):
        if key in spec and not isinstance(spec[key], dict):
            raise keyed(SweepError, "sweep", f"{path}: {key}", "must be a table")
    spec["traces"] = [str(here / t) for t in spec.get("traces", [])]
    config = spec.get("config", "k9lag08u0m-4ch")
    if isinstance(config, str) and (here / config).is_file():
        config = str(here / config)
    spec["config"] = config
    for key in ("out", "snapshot_dir"):
        if key in spec:
            spec[key] = str(here / spec[key])
    if not isinstance(spec.get("snapshots", True), bool):
        raise keyed(SweepError, "sweep", f"{path}: snapshots", "must be true or false")
    return spec


def cmd_sweep(a: argparse.Namespace) -> None:
    spec = load_spec(Path(a.spec))
    out = a.out or spec.get("out")
    df = sweep(
        spec["config"],
        grid=spec.get("grid"),
        ftls=spec.get("ftls"),
        traces=spec["traces"],
        workloads=spec.get("workloads"),
        seeds=spec.get("seeds"),
        precondition=spec.get("precondition"),
        overrides=spec.get("set"),
        format=spec.get("format"),
        backend=a.backend or spec.get("backend", "local"),
        address=a.address or spec.get("address"),
        workers=a.workers or spec.get("workers"),
        path=out,
        snapshots=spec.get("snapshots", True) and not a.no_snapshots,
        snapshot_dir=a.snapshot_dir or spec.get("snapshot_dir"),
    )
    shown = ["ftl", "input", "seed", *(spec.get("grid") or {}), "write_amplification", "iops", "latency_us.all.p99"]
    print(df[[c for c in shown if c in df.columns]].to_string(index=False))
    if out:
        print(f"ftlsim: {len(df)} runs in {out}", file=sys.stderr)


def cmd_plot(a: argparse.Namespace) -> None:
    from .plot import render

    options: dict[str, Any] = {}
    for name in ("x", "y"):
        if getattr(a, name):
            options[name] = getattr(a, name)
    for name in ("columns", "label"):
        if getattr(a, name):
            options[name] = getattr(a, name).split(",")
    render(a.input, a.out, kind=a.kind, **options)
    print(f"ftlsim: wrote {a.out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ftlsim", description="ftlsim sweeps and plots (Python side)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="run a sweep described by a TOML spec")
    s.add_argument("spec")
    s.add_argument("--out", help="Parquet or CSV table (resumes from it); overrides the spec's out")
    s.add_argument("--backend", choices=["local", "ray"])
    s.add_argument("--address", help="Ray cluster address (backend ray)")
    s.add_argument("--workers", type=int, help="parallel runs (local pool size, or Ray CPUs when starting Ray)")
    s.add_argument(
        "--no-snapshots", action="store_true", help="precondition every run instead of sharing snapshots of each drive"
    )
    s.add_argument("--snapshot-dir", help="where the shared snapshots go (default: snapshots/ beside the table)")
    s.set_defaults(fn=cmd_sweep)
    q = sub.add_parser("plot", help="render a JSON report, a sweep table or repro tables to PNG/SVG")
    q.add_argument("input", help="report JSON, compare JSON, sweep .parquet/.csv, repro .csv/.json or directory")
    q.add_argument("-o", "--out", required=True, help="image path (.png, .svg, .pdf)")
    q.add_argument("--kind", default="auto", choices=["auto", "wa", "timeseries", "tail", "repro"])
    q.add_argument("--x", help="sweep column on the x axis (wa; default overprovisioning)")
    q.add_argument("--y", help="sweep column on the y axis (wa; default write_amplification)")
    q.add_argument("--columns", help="numeric columns to draw, comma-separated (repro)")
    q.add_argument("--label", help="columns naming a configuration, comma-separated (repro)")
    q.set_defaults(fn=cmd_plot)
    a = p.parse_args(argv)
    try:
        a.fn(a)
    except (FtlsimError, OSError, KeyError, ValueError) as e:
        print(f"ftlsim: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
