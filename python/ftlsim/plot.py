"""Plots of runs and sweeps (matplotlib, drawn on Agg canvases without pyplot).

Every function returns a :class:`matplotlib.figure.Figure` and, given
``path``, also writes it there (PNG, SVG or PDF, from the suffix). No global
matplotlib state is touched, so these work in scripts, servers and notebooks
alike.

- :func:`latency_cdf`: per-request latency CDF, one line per run (FTL).
- :func:`latency_tail`: the same from report summaries only (JSON reports
  keep percentiles, not every request).
- :func:`wa_vs_op`: write amplification against over-provisioning from a sweep,
  one line per combination of the other swept keys.
- :func:`erase_heatmap`: erase counts over the physical layout, and their histogram.
- :func:`timeseries`: latency and GC activity per time window.
- :func:`repro`: a generic table of rows (a paper reproduction's CSV/JSON) as
  grouped bars of its numeric columns per configuration.
- :func:`render`: what ``ftlsim plot`` calls: picks one of the above from a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _sweep
from ._api import Result

if TYPE_CHECKING:
    import pandas
    from matplotlib.figure import Figure

PathLike = str | os.PathLike[str]


def _figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (7.0, 4.5)) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.subplots(rows, cols, squeeze=False)


def _done(fig: Figure, path: PathLike | None) -> Figure:
    if path is not None:
        fig.savefig(os.fspath(path), dpi=110)
    return fig


def _labelled(results: Result | Sequence[Result] | Mapping[str, Result]) -> list[tuple[str, Result]]:
    if isinstance(results, Result):
        results = [results]
    if isinstance(results, Mapping):
        return [(str(k), r) for k, r in results.items()]
    return [(r.summary["ftl"], r) for r in results]


def latency_cdf(
    results: Result | Sequence[Result] | Mapping[str, Result], op: str = "all", path: PathLike | None = None
) -> Figure:
    """CDF of request latency, one line per run, labelled by FTL (or by the mapping's keys)."""
    fig, ax = _figure()
    ax = ax[0, 0]
    for label, r in _labelled(results):
        lat = r.latencies()
        us = np.concatenate(list(lat.values())) if op == "all" else lat[op]
        if us.size == 0:
            continue
        us = np.sort(us)
        ax.step(us, np.arange(1, us.size + 1) / us.size, where="post", label=f"{label} (n={us.size})")
    ax.set_xscale("log")
    ax.set(xlabel=f"{op} latency (µs)", ylabel="fraction of requests", title="Latency CDF", ylim=(0, 1.01))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _done(fig, path)


def latency_tail(reports: Sequence[Mapping[str, Any]], op: str = "all", path: PathLike | None = None) -> Figure:
    """Latency percentiles (p50, p99, p99.9, max) of report summaries, as points of the tail distribution."""
    fig, ax = _figure()
    ax = ax[0, 0]
    tails = np.array([0.5, 0.01, 0.001])
    for rep in reports:
        s = rep["latency_us"][op]
        if s["count"] == 0:
            continue
        x = [s["p50"], s["p99"], s["p999"], s["max"]]
        y = [*tails, 1.0 / s["count"]]
        ax.plot(x, y, marker="o", label=f"{rep['ftl']} {rep['config']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set(
        xlabel=f"{op} latency (µs)", ylabel="fraction of requests slower", title="Latency tail (p50, p99, p99.9, max)"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _done(fig, path)


def _table(source: pandas.DataFrame | PathLike) -> pandas.DataFrame:
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return source
    p = Path(source)
    return pd.read_csv(p) if p.suffix == ".csv" else pd.read_parquet(p)


def wa_vs_op(
    sweep: pandas.DataFrame | PathLike,
    path: PathLike | None = None,
    x: str = "overprovisioning",
    y: str = "write_amplification",
    hue: Sequence[str] = ("ftl", "input"),
) -> Figure:
    """``y`` against ``x`` from a sweep table: one line per combination of the swept keys other than ``x``.

    Only seeds are averaged over. A line's label is the values of the ``hue``
    columns that vary (the first one's when none does), then ``key=value``
    for every other swept key that varies: the FTL, the input and the grid's
    keys, e.g. ``page, gc.policy=fifo``. Select rows first to leave a swept
    key out. A table not written by :func:`ftlsim.sweep` has no grid keys
    that can be told from results: give them as ``hue``.
    """
    df = _table(sweep)
    for col in [x, y, *hue]:
        if col not in df.columns:
            raise KeyError(f"column {col!r} is not in the sweep table; it has: {', '.join(map(str, df.columns))}")

    def varies(col: str) -> bool:
        return df[col].nunique(dropna=False) > 1

    hue = [h for h in hue if h != x]
    named = [h for h in hue if varies(h)] or hue[:1]
    # Rows of different values of a swept key are different experiments: a
    # mean over them would be a line no configuration has.
    swept = ["ftl", "input", *_sweep.param_columns(df.columns)]
    others = [k for k in swept if k in df.columns and k != x and k not in hue and varies(k)]
    keys = [*named, *others]
    groups = df.groupby(keys, sort=True, dropna=False) if keys else [((), df)]
    fig, ax = _figure()
    ax = ax[0, 0]
    for key, g in groups:
        values = dict(zip(keys, key, strict=True))
        head = " ".join(str(values[h]) for h in named)
        label = ", ".join(part for part in (head, *(f"{k}={values[k]}" for k in others)) if part) or y
        line = g.groupby(x, sort=True)[y].mean()
        ax.plot(line.index, line.values, marker="o", label=label)
    ax.set(xlabel=x, ylabel=y, title=f"{y} vs {x}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _done(fig, path)


def erase_heatmap(result: Result | pandas.DataFrame, path: PathLike | None = None) -> Figure:
    """Erase count of every block: rows are planes (channel/chip/die/plane), columns blocks; and a histogram."""
    df = result.erase_counts() if isinstance(result, Result) else result
    units = ["channel", "chip", "die", "plane"]
    grid = df.pivot_table(index=units, columns="block", values="erase_count", aggfunc="first").sort_index()
    fig, axes = _figure(1, 2, size=(11.0, 4.5))
    heat, hist = axes[0]
    im = heat.imshow(grid.to_numpy(), aspect="auto", interpolation="nearest", cmap="viridis")
    heat.set(xlabel="block in plane", ylabel="plane (channel, chip, die, plane)", title="Erase count per block")
    ticks = np.linspace(0, len(grid.index) - 1, min(8, len(grid.index))).astype(int)
    heat.set_yticks(ticks, ["/".join(map(str, grid.index[i])) for i in ticks], fontsize="small")
    fig.colorbar(im, ax=heat, label="erases")
    counts = df["erase_count"].to_numpy()
    hist.hist(counts, bins=np.arange(counts.min(), counts.max() + 2) - 0.5)
    hist.set(xlabel="erase count", ylabel="blocks", title=f"Wear: mean {counts.mean():.2f}, max {counts.max()}")
    return _done(fig, path)


def timeseries(run: Result | Mapping[str, Any] | pandas.DataFrame, path: PathLike | None = None) -> Figure:
    """Latency (mean and max per window) and GC activity (erases, programs beyond host writes) over time."""
    import pandas as pd

    if isinstance(run, Result):
        df = run.timeseries()
    elif isinstance(run, Mapping):
        df = pd.DataFrame(run.get("timeseries", []))
    else:
        df = run
    if len(df) == 0:
        raise ValueError("no time series: run with report.window_ms > 0 (ftlsim run --timeseries)")
    fig, axes = _figure(2, 1, size=(8.0, 6.0))
    lat, gc = axes[0, 0], axes[1, 0]
    t = df["start_s"]
    lat.plot(t, df["mean_latency_us"], label="mean")
    lat.plot(t, df["max_latency_us"], label="max", alpha=0.6)
    lat.set(ylabel="latency (µs)", yscale="log", title="Latency and GC activity per window")
    lat.legend()
    extra = (df["flash_pages_programmed"].astype("int64") - df["host_pages_written"].astype("int64")).clip(lower=0)
    gc.plot(t, extra, label="programs beyond host writes (GC copies)")
    gc.plot(t, df["blocks_erased"], label="blocks erased")
    gc.set(xlabel="time (s)", ylabel="per window")
    gc.legend()
    for ax in (lat, gc):
        ax.grid(True, alpha=0.3)
    return _done(fig, path)


def _rows_of(p: Path) -> pandas.DataFrame:
    import pandas as pd

    if p.suffix == ".csv":
        return pd.read_csv(p)
    data = json.loads(p.read_text())
    if isinstance(data, Mapping) and isinstance(data.get("rows"), list):
        data = data["rows"]
    if isinstance(data, Mapping):  # {config: {column: value}}
        return pd.DataFrame([{"config": k, **v} for k, v in data.items() if isinstance(v, Mapping)])
    return pd.DataFrame(list(data))


#: Numeric columns that name a configuration rather than measure it.
LABEL_COLUMNS = ("sectors", "seed", "queue_depth", "qd")

#: Most numeric columns drawn per table (one panel each) when none are named.
MAX_PANELS = 8


def _repro_tables(p: Path) -> list[tuple[str, pandas.DataFrame]]:
    """(title, rows) per table of a file or of a repro folder: a CSV is preferred
    to a JSON of the same name (the JSON nests what the CSV flattens), and a
    ``table`` column splits a file into its tables."""
    if p.is_dir():
        by_stem: dict[str, Path] = {}
        for f in sorted(p.iterdir()):
            if f.suffix in (".csv", ".json") and (f.stem not in by_stem or f.suffix == ".csv"):
                by_stem[f.stem] = f
        files = list(by_stem.values())
        if not files:
            raise FileNotFoundError(f"{p}: no .csv or .json tables to plot")
    else:
        files = [p]
    out = []
    for f in files:
        df = _rows_of(f)
        if "table" in df.columns:
            out += [
                (f"{f.stem}: {t}", g.drop(columns="table").dropna(axis=1, how="all"))
                for t, g in df.groupby("table", sort=False)
            ]
        else:
            out.append((f.stem, df))
    return out


def _is_label(series: pandas.Series) -> bool:
    """A column naming a configuration: short scalar values, not JSON fragments."""
    text = series.astype(str)
    return not text.str.match(r"^\s*[\[{]").any() and text.str.len().max() <= 40


def repro(
    source: PathLike | pandas.DataFrame,
    path: PathLike | None = None,
    columns: Sequence[str] | None = None,
    label: Sequence[str] | None = None,
) -> Figure:
    """A table of rows as bar charts: one panel per numeric column, one bar per configuration.

    ``source`` is a data frame, a CSV or JSON file (a list of row objects,
    ``{"rows": [...]}`` or ``{config: {column: value}}``), or a directory of
    them (``ftlsim repro`` output; a CSV is read instead of a JSON of the same
    name, and a ``table`` column splits a file into tables). ``label`` names
    the columns that identify a configuration (default: the short
    non-numeric ones); ``columns`` the numeric columns to draw (default: those
    that vary, at most :data:`MAX_PANELS`). When an ``ftl`` column is among
    the labels, bars are grouped by the other labels and coloured by FTL, with
    a legend in the bars' order. Each panel's y axis is named by its column
    (units as the column names them: ``_s``, ``_us``, ``mb_s``); a y range
    spanning more than three decades is drawn on a log scale.
    """
    import pandas as pd

    tables = [("", source)] if isinstance(source, pd.DataFrame) else _repro_tables(Path(source))
    panels = []
    for name, df in tables:
        numeric = [
            c
            for c in df.columns
            if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) and c not in LABEL_COLUMNS
        ]
        if columns is not None:
            missing = [c for c in columns if c not in numeric]
            if missing:
                raise KeyError(f"{name or 'table'}: numeric columns to plot {missing} not found; it has {numeric}")
            cols = list(columns)
        else:
            cols = [c for c in numeric if df[c].nunique(dropna=True) > 1][:MAX_PANELS] or numeric[:MAX_PANELS]
        if not cols:
            raise KeyError(f"{name or 'table'}: no numeric columns to plot")
        keys = list(label) if label is not None else [c for c in df.columns if c not in numeric and _is_label(df[c])]
        panels += [(name, df, keys, c) for c in cols]
    ncols = 2 if len(panels) > 1 else 1
    nrows = -(-len(panels) // ncols)
    fig, axes = _figure(nrows, ncols, size=(6.0 * ncols, 3.6 * nrows))
    for ax, (name, df, keys, col) in zip(axes.flat, panels, strict=False):
        _bars(ax, df, keys, col)
        ax.set_title(f"{name}: {col}" if name else col, fontsize="medium")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    stems = dict.fromkeys(name.split(":")[0] for name, _ in tables if name)
    fig.suptitle(" ".join(["ftlsim repro", *stems]))
    return _done(fig, path)


def _bars(ax: Any, df: pandas.DataFrame, keys: list[str], col: str) -> None:
    """One numeric column as bars: grouped by the labels other than ``ftl``, coloured by FTL."""
    values = df[col].to_numpy(dtype=float)
    group_keys = [k for k in keys if k != "ftl"]
    by_ftl = "ftl" in keys and group_keys
    groups = df[group_keys].astype(str).agg(" ".join, axis=1) if group_keys else pd_index(df)
    if by_ftl:
        names = list(dict.fromkeys(groups))
        ftls = list(dict.fromkeys(df["ftl"].astype(str)))
        width = 0.8 / len(ftls)
        for i, ftl in enumerate(ftls):
            mask = (df["ftl"].astype(str) == ftl).to_numpy()
            x = np.array([names.index(g) for g in groups[mask]])
            ax.bar(x + (i - (len(ftls) - 1) / 2) * width, values[mask], width, label=ftl)
        ax.legend(title="ftl", fontsize="small")
    else:
        names = list(df[keys].astype(str).agg(" ".join, axis=1)) if keys else [str(i) for i in range(len(df))]
        ax.bar(np.arange(len(df)), values, 0.6)
    rotate = len(names) > 3 or max((len(n) for n in names), default=0) > 12
    ax.set_xticks(np.arange(len(names)), names, rotation=30 if rotate else 0, ha="right" if rotate else "center")
    ax.set_xlabel(" / ".join(group_keys if by_ftl else keys) or "row")
    ax.set_ylabel(col)
    positive = values[np.isfinite(values) & (values > 0)]
    if len(positive) and positive.max() / positive.min() > 1000:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)


def pd_index(df: pandas.DataFrame) -> pandas.Series:
    import pandas as pd

    return pd.Series([str(i) for i in range(len(df))], index=df.index)


def render(source: PathLike, out: PathLike, kind: str = "auto", **options: Any) -> Figure:
    """Draws a file as ``ftlsim plot`` does: a sweep table (``run_id`` column) as WA vs OP, a JSON
    report as its time series (or latency tail without one), a JSON array of reports as
    their latency tails, anything else (a directory, CSV or JSON of rows) as a repro table."""
    p = Path(source)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    if kind == "auto":
        kind = _guess_kind(p)
    if kind == "wa":
        return wa_vs_op(p, out, **options)
    if kind == "repro":
        return repro(p, out, **options)
    data = json.loads(p.read_text())
    reports = data if isinstance(data, list) else [data]
    if kind == "timeseries":
        return timeseries(reports[0], out)
    if kind == "tail":
        return latency_tail(reports, path=out, **options)
    raise ValueError(f"unknown plot kind {kind!r}: auto, wa, timeseries, tail or repro")


def _guess_kind(p: Path) -> str:
    if p.is_dir():
        return "repro"
    if p.suffix in (".parquet", ".csv"):
        return "wa" if "run_id" in _table(p).columns else "repro"
    data = json.loads(p.read_text())
    if isinstance(data, Mapping) and "latency_us" in data:
        return "timeseries" if data.get("timeseries") else "tail"
    if isinstance(data, list) and data and all(isinstance(r, Mapping) and "latency_us" in r for r in data):
        return "tail"
    return "repro"
