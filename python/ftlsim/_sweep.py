"""Sweeps: the cross product of FTLs x inputs x config values x seeds, one row per run.

Each run is an ordinary :func:`ftlsim.run`; a sweep only enumerates runs,
fans them out (a local thread pool by default, or Ray) and collects rows in
the cross product's order, so both backends return the same table. With a
path, the table is written as Parquet (or CSV) and runs already in that file
are skipped, so an interrupted sweep resumes where it stopped.

Preconditioned runs share snapshots (``snapshots/`` beside the table, or a
temporary directory without one): runs of one drive precondition once and
the others load its state. The first run of each drive is started first, so
no worker waits for a drive another one is still preconditioning while other
work is left. Progress goes to stderr, one line a run, then a summary
("12 runs; 1 preconditioned, 11 loaded").
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from . import _api, _native
from .errors import SweepError, keyed

if TYPE_CHECKING:
    import pandas

#: Columns a sweep adds to every row besides the swept parameters and the report's fields.
RUN_COLUMNS = ("run_id", "ftl", "input", "seed", "config_fingerprint", "version")


#: The report's first field in a row: :func:`run_one` puts the swept keys just before it (a grid may not name it).
FIRST_REPORT_COLUMN = "config"


def param_columns(columns: Iterable[str]) -> list[str]:
    """The swept grid keys of a sweep table: its columns between the run columns and the report's.

    Empty when the columns lack that layout (a table not written by :func:`sweep`).
    """
    cols = list(columns)
    try:
        start = cols.index(RUN_COLUMNS[-1]) + 1
        end = cols.index(FIRST_REPORT_COLUMN)
    except ValueError:
        return []
    return cols[start:end]


def _sweep_error(key: str, reason: str) -> Exception:
    return keyed(SweepError, "sweep", key, reason)


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested report fields as dotted columns (``latency_us.write.p99``); the time series is left out."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k == "timeseries":
            continue
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def plan(
    base: _api.ConfigLike,
    grid: Mapping[str, Sequence[Any]],
    ftls: Sequence[str | None],
    inputs: Sequence[tuple[str, str]],
    seeds: Sequence[int | None],
    precondition: str | None,
    overrides: _api.Overrides,
    format: str | None,
) -> list[dict[str, Any]]:
    """Every run of the sweep, resolved and validated before any of them starts."""
    keys = list(grid)
    runs = []
    for ftl, (kind, source), values, seed in itertools.product(
        ftls, inputs, itertools.product(*(grid[k] for k in keys)), seeds
    ):
        params = dict(zip(keys, values, strict=True))
        sets = _api.override_list(overrides) + _api.override_list(params, **{"ftl.name": ftl, "seed": seed})
        resolved = _native.resolve_config(overrides=sets, **_api.config_args(base))
        fingerprint = hashlib.sha256(resolved.encode()).hexdigest()[:16]
        runs.append(
            {
                "config": base if not isinstance(base, os.PathLike) else os.fspath(base),
                "overrides": sets,
                kind: source,
                "format": format if kind == "trace" else None,
                "precondition": precondition,
                "params": params,
                "input": source,
                "fingerprint": fingerprint,
                "run_id": _digest(fingerprint, kind, source, format, precondition),
            }
        )
    return runs


def run_one(spec: Mapping[str, Any]) -> dict[str, Any]:
    """One run of a sweep as a row (module-level so process pools and Ray can ship it)."""
    r = _api.run(
        spec["config"],
        trace=spec.get("trace"),
        workload=spec.get("workload"),
        format=spec["format"],
        precondition=spec["precondition"],
        overrides=spec["overrides"],
        window_ms=None,
        keep_latencies=False,
        snapshot_dir=spec.get("snapshot_dir"),
    )
    s = r.summary
    row = {
        "run_id": spec["run_id"],
        "ftl": s["ftl"],
        "input": spec["input"],
        "seed": s["seed"],
        "config_fingerprint": spec["fingerprint"],
        "version": s["version"],
    }
    # The swept keys go between the run columns and the report's: param_columns finds them there.
    row.update(spec["params"])
    row.update({k: v for k, v in flatten(s).items() if k not in row})
    return row


def snapshot_first(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs reordered so the first of each drive (config and preconditioning) comes before any second one.

    Runs of one drive share a snapshot and wait for whichever makes it, so
    this keeps the pool busy preconditioning other drives meanwhile.
    """
    seen: dict[tuple[str, Any], int] = {}
    rank = []
    for s in specs:
        key = (s["fingerprint"], s["precondition"])
        rank.append(seen.get(key, 0))
        seen[key] = rank[-1] + 1
    return [s for _, s in sorted(zip(rank, specs, strict=True), key=lambda x: x[0])]


class _Progress:
    """One stderr line per finished run, and the summary at the end."""

    def __init__(self, total: int, show: bool):
        self.total, self.show, self.done, self.start = total, show, 0, time.monotonic()
        self.snapshots: dict[str, int] = {}

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        self.done += 1
        snap = row.get("input.snapshot")
        kind = "not preconditioned" if snap is None else ("loaded" if snap == "loaded" else "preconditioned")
        self.snapshots[kind] = self.snapshots.get(kind, 0) + 1
        if self.show:
            elapsed = time.monotonic() - self.start
            print(
                f"ftlsim: sweep [{self.done}/{self.total}] {row['ftl']} {row['input']} seed={row['seed']}: "
                f"{kind if snap in (None, 'loaded', 'saved', 'none') else snap}, {row['wall_time_s']:.2f} s "
                f"({elapsed:.1f} s elapsed)",
                file=sys.stderr,
                flush=True,
            )
        return row

    def summary(self, skipped: int) -> str:
        kinds = ("preconditioned", "loaded", "not preconditioned")
        parts = [f"{self.snapshots[k]} {k}" for k in kinds if k in self.snapshots]
        text = f"{self.done} runs"
        if parts:
            text += "; " + ", ".join(parts)
        return text + (f"; {skipped} already in the table" if skipped else "")


def _execute(
    specs: list[dict[str, Any]], backend: str, address: str | None, workers: int | None, progress: _Progress
) -> list[dict]:
    if not specs:
        return []
    if backend == "local":
        from concurrent.futures import ThreadPoolExecutor, as_completed

        n = min(workers or os.cpu_count() or 1, len(specs))
        # Threads, not processes: the core releases the GIL for the whole run,
        # so threads run in parallel, start at once and need no
        # `if __name__ == "__main__":` guard (a spawned process pool re-imports
        # __main__, which breaks scripts, heredocs and `python -c`). Measured
        # in the README (Python section).
        with ThreadPoolExecutor(n) as pool:
            return [progress(f.result()) for f in as_completed([pool.submit(run_one, s) for s in specs])]
    if backend == "ray":
        import ray

        started = not ray.is_initialized()
        if started:
            if address is None:
                ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False)
        try:
            task = ray.remote(run_one)
            pending = [task.remote(s) for s in specs]
            rows = []
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                rows.append(progress(ray.get(ready[0])))
            return rows
        finally:
            if started:
                ray.shutdown()
    raise _sweep_error("backend", f"{backend!r} is not 'local' or 'ray'")


class _snapshot_dir:
    """The directory a sweep's snapshots go to (None: off), made temporary when the sweep has no table."""

    def __init__(self, on: bool, given: str | os.PathLike[str] | None, table: Path | None):
        self.tmp: tempfile.TemporaryDirectory[str] | None = None
        self.path: str | None = None
        if not on:
            return
        if given is not None:
            self.path = os.fspath(given)
        elif table is not None:
            self.path = os.fspath(table.parent / "snapshots")
        else:
            self.tmp = tempfile.TemporaryDirectory(prefix="ftlsim-snapshots-")
            self.path = self.tmp.name

    def __enter__(self) -> str | None:
        return self.path

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            self.tmp.cleanup()


def _read_table(path: Path) -> pandas.DataFrame:
    import pandas as pd

    return pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)


def _write_table(df: pandas.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if path.suffix == ".csv":
        df.to_csv(tmp, index=False)
    else:
        df.to_parquet(tmp, index=False)
    tmp.replace(path)  # never leave a half-written table behind


def sweep(
    base: _api.ConfigLike = "k9lag08u0m-4ch",
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    ftls: Sequence[str] | None = None,
    traces: Iterable[str | os.PathLike[str]] | None = None,
    workloads: Iterable[str] | None = None,
    seeds: Sequence[int] | None = None,
    precondition: str | Mapping[str, float | str] | None = None,
    overrides: _api.Overrides = None,
    format: str | None = None,
    backend: Literal["local", "ray"] = "local",
    address: str | None = None,
    workers: int | None = None,
    path: str | os.PathLike[str] | None = None,
    snapshots: bool = True,
    snapshot_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> pandas.DataFrame:
    """Runs every combination of ``ftls`` x (``traces`` + ``workloads``) x ``grid`` x ``seeds``.

    ``grid`` maps dotted config keys to the values to try; ``overrides`` are
    fixed for every run. Returns one pandas row per run: ``run_id``, ``ftl``,
    ``input``, ``seed``, ``config_fingerprint`` (hash of the resolved config),
    ``version``, one column per swept key, and every report field (nested
    ones dotted, e.g. ``latency_us.write.p99``). ``backend="ray"`` connects to
    ``address`` or starts a local Ray instance. With ``path`` (``.parquet`` or
    ``.csv``), runs whose ``run_id`` is already there are not repeated, and
    the whole table is written back after the new runs.

    With ``precondition``, runs of one drive share a snapshot of it
    (``snapshot_dir``, default ``snapshots/`` beside ``path``, or a
    temporary directory without one), so a sweep over workloads on one
    config preconditions once; ``snapshots=False`` preconditions every run.
    A run's snapshot use is its ``input.snapshot`` column. ``progress``
    prints a line per finished run and a summary on stderr.
    """
    import pandas as pd

    grid = dict(grid or {})
    for k, values in grid.items():
        if k in ("seed", "ftl.name"):
            raise _sweep_error(f"grid.{k}", "sweep seeds with seeds= and FTLs with ftls=")
        if k in RUN_COLUMNS or k == FIRST_REPORT_COLUMN:
            raise _sweep_error(f"grid.{k}", "clashes with a column every sweep row has")
        if isinstance(values, str) or not isinstance(values, Sequence) or len(values) == 0:
            raise _sweep_error(f"grid.{k}", "must be a non-empty list of values")
    inputs = [("trace", os.fspath(t)) for t in traces or []] + [("workload", w) for w in workloads or []]
    if not inputs:
        raise _sweep_error("inputs", "give at least one trace or workload")
    if backend not in ("local", "ray"):
        raise _sweep_error("backend", f"{backend!r} is not 'local' or 'ray'")
    specs = plan(
        base,
        grid,
        list(ftls or [None]),
        inputs,
        list(seeds or [None]),
        _api.precondition_spec(precondition),
        overrides,
        format,
    )

    table = Path(path) if path is not None else None
    done: dict[str, dict[str, Any]] = {}
    if table is not None and table.exists():
        old = _read_table(table)
        if "run_id" not in old.columns:
            raise _sweep_error("path", f"{table} exists but is not a sweep table (no run_id column)")
        done = {r["run_id"]: r for r in old.to_dict("records")}
    todo = [s for s in specs if s["run_id"] not in done]
    report = _Progress(len(todo), progress)
    with _snapshot_dir(snapshots and precondition is not None, snapshot_dir, table) as snaps:
        for s in todo:
            s["snapshot_dir"] = snaps
        rows = _execute(snapshot_first(todo), backend, address, workers, report)
    if progress:
        print(f"ftlsim: sweep: {report.summary(len(specs) - len(todo))}", file=sys.stderr, flush=True)
    fresh = {row["run_id"]: row for row in rows}
    ids = [s["run_id"] for s in specs]
    planned = set(ids)
    # Rows of the file that this sweep did not plan are kept, after its own.
    rows = [fresh.get(i) or done[i] for i in ids] + [r for i, r in done.items() if i not in planned]
    df = pd.DataFrame(rows)
    if table is not None:
        _write_table(df, table)
    return df
