"""Sweeps: the cross product of FTLs x inputs x config values x seeds, one row per run.

Each run is an ordinary :func:`ftlsim.run`; a sweep only enumerates runs,
fans them out (a local thread pool by default, or Ray) and collects rows in
the cross product's order, so both backends return the same table. With a
path, the table is written as Parquet (or CSV) and runs already in that file
are skipped, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
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


def _execute(specs: list[dict[str, Any]], backend: str, address: str | None, workers: int | None) -> list[dict]:
    if not specs:
        return []
    if backend == "local":
        from concurrent.futures import ThreadPoolExecutor

        n = min(workers or os.cpu_count() or 1, len(specs))
        # Threads, not processes: the core releases the GIL for the whole run,
        # so threads run in parallel, start at once and need no
        # `if __name__ == "__main__":` guard (a spawned process pool re-imports
        # __main__, which breaks scripts, heredocs and `python -c`). Measured
        # in the README (Python section).
        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(run_one, specs))
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
            return ray.get([task.remote(s) for s in specs])
        finally:
            if started:
                ray.shutdown()
    raise _sweep_error("backend", f"{backend!r} is not 'local' or 'ray'")


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
    fresh = {row["run_id"]: row for row in _execute(todo, backend, address, workers)}
    ids = [s["run_id"] for s in specs]
    planned = set(ids)
    # Rows of the file that this sweep did not plan are kept, after its own.
    rows = [fresh.get(i) or done[i] for i in ids] + [r for i, r in done.items() if i not in planned]
    df = pd.DataFrame(rows)
    if table is not None:
        _write_table(df, table)
    return df
