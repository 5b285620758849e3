"""``ftlsim.run`` and its :class:`Result`: argument conversion around the native run."""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _native
from .errors import ConfigError, WorkloadError, keyed

if TYPE_CHECKING:
    import pandas
    import polars

ConfigLike = str | os.PathLike[str] | Mapping[str, Any]
Overrides = Mapping[str, Any] | Iterable[str] | None
Backend = Literal["pandas", "polars"]

#: The time-series window ``run`` uses when the config sets none (as ``ftlsim run --timeseries``).
DEFAULT_WINDOW_MS = 100.0

TIMESERIES_COLUMNS = (
    "start_s",
    "requests",
    "reads",
    "writes",
    "trims",
    "mean_latency_us",
    "max_latency_us",
    "host_pages_written",
    "flash_pages_programmed",
    "flash_pages_read",
    "blocks_erased",
)
ERASE_COLUMNS = ("channel", "chip", "die", "plane", "block", "erase_count")


def _error(cls: type[ConfigError] | type[WorkloadError], key: str, reason: str) -> Exception:
    return keyed(cls, "config" if cls is ConfigError else "workload", key, reason)


def toml_value(key: str, v: Any) -> str:
    """A Python value as a TOML literal for a ``KEY=VALUE`` override."""
    # numbers.*, not int/float: NumPy scalars from data frames are values too.
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        v = float(v)
        if math.isnan(v):
            return "nan"
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(key, x) for x in v) + "]"
    raise _error(
        ConfigError, key, f"{type(v).__name__} value {v!r} has no TOML form; use bool, int, float, str or list"
    )


def override_list(overrides: Overrides, **named: Any) -> list[str]:
    """``KEY=VALUE`` strings from a mapping (or already-formatted strings) plus named keys that are not None."""
    out: list[str] = []
    if isinstance(overrides, Mapping):
        for k, v in overrides.items():
            if not isinstance(k, str):
                raise _error(ConfigError, repr(k), "override keys are dotted strings such as 'gc.policy'")
            out.append(f"{k}={toml_value(k, v)}")
    elif overrides is not None:
        if isinstance(overrides, str):
            raise _error(ConfigError, overrides, "overrides take a dict or a list of KEY=VALUE strings")
        out.extend(overrides)
    out.extend(f"{k}={toml_value(k, v)}" for k, v in named.items() if v is not None)
    return out


def config_args(config: ConfigLike) -> dict[str, Any]:
    """How the native layer reads a config: a preset name or path, or a dict's JSON."""
    if isinstance(config, Mapping):
        try:
            return {"name": "config dict", "json": json.dumps(config, allow_nan=True)}
        except (TypeError, ValueError) as e:
            raise _error(ConfigError, "config dict", str(e)) from None
    if isinstance(config, str | os.PathLike):
        return {"name": os.fspath(config)}
    raise _error(ConfigError, "config", f"expected a preset name, a TOML path or a dict, not {type(config).__name__}")


def precondition_spec(p: str | Mapping[str, float | str] | None) -> str | None:
    if p is None or isinstance(p, str):
        return p
    if isinstance(p, Mapping):
        return ",".join(f"{k}={v}" for k, v in p.items())
    expected = "expected 'fill=F,overwrite=F[,mode=fast|timed|functional]' or a dict with fill/overwrite/mode"
    raise _error(WorkloadError, "precondition", expected)


def resolve_config(config: ConfigLike = "k9lag08u0m-4ch", overrides: Overrides = None, **named: Any) -> str:
    """The resolved config as TOML, as ``ftlsim config show`` prints it."""
    return _native.resolve_config(overrides=override_list(overrides, **named), **config_args(config))


def run(
    config: ConfigLike = "k9lag08u0m-4ch",
    *,
    ftl: str | None = None,
    trace: str | os.PathLike[str] | None = None,
    workload: str | None = None,
    format: str | None = None,
    skip_bad_lines: bool = False,
    precondition: str | Mapping[str, float | str] | None = None,
    seed: int | None = None,
    overrides: Overrides = None,
    window_ms: float | None = None,
    keep_latencies: bool = True,
    snapshot_dir: str | os.PathLike[str] | None = None,
) -> Result:
    """Simulates one FTL on a trace or a synthetic workload; the same run as ``ftlsim run``.

    ``config`` is a preset name (``ftlsim.presets()``), a TOML path or a dict;
    ``overrides`` sets dotted keys (``{"gc.policy": "fifo"}``). ``window_ms``
    sets the time-series window (default: the config's, or 100 ms when it has
    none; 0 for none). ``keep_latencies`` keeps every request's latency for
    :meth:`Result.latencies` (memory grows with the run). With
    ``snapshot_dir``, the preconditioned drive is saved there and loaded by
    later runs of the same drive instead of preconditioning again (see the
    README's "Snapshots"); ``summary["input"]["snapshot"]`` says which
    happened. Ctrl-C stops the run with ``KeyboardInterrupt``.
    """
    if (trace is None) == (workload is None):
        raise _error(ConfigError, "input", "give exactly one of trace= or workload=")
    names = {"ftl.name": ftl, "seed": seed, "report.window_ms": window_ms}
    sets = override_list(overrides, **names)
    out = _native.run(
        overrides=sets,
        trace=None if trace is None else os.fspath(trace),
        format=format,
        skip_bad_lines=skip_bad_lines,
        workload=workload,
        precondition=precondition_spec(precondition),
        keep_latencies=keep_latencies,
        default_window_ms=DEFAULT_WINDOW_MS if window_ms is None else None,
        snapshot_dir=None if snapshot_dir is None else os.fspath(snapshot_dir),
        **config_args(config),
    )
    result = Result(out["summary"], out["latencies_ns"], out["erase_map"])
    # The report names the overrides as this front end was given them, as the CLI does.
    result.summary["overrides"] = sets
    return result


def frame(columns: Mapping[str, Any], backend: Backend) -> pandas.DataFrame | polars.DataFrame:
    """A data frame from columns; polars is imported only when asked for."""
    if backend == "pandas":
        import pandas as pd

        return pd.DataFrame(dict(columns))
    if backend == "polars":
        import polars as pl

        return pl.DataFrame(dict(columns))
    raise ValueError(f"backend must be 'pandas' or 'polars', not {backend!r}")


class Result:
    """One finished run.

    ``summary`` is the report as a dict, field for field the JSON of
    ``ftlsim run --json`` (documented in docs/report.md).
    """

    def __init__(self, summary_json: str, latencies_ns: Mapping[str, bytes] | None, erase_map: Mapping[str, bytes]):
        self.summary: dict[str, Any] = json.loads(summary_json)
        self._latencies_ns = latencies_ns
        self._erase_map = erase_map

    def __repr__(self) -> str:
        s = self.summary
        wa = s["write_amplification"]
        return (
            f"<ftlsim.Result ftl={s['ftl']} config={s['config']} requests={s['requests']} "
            f"iops={s['iops']:.0f} WA={'n/a' if wa is None else f'{wa:.3f}'}>"
        )

    def latencies(self, unit: Literal["us", "ns"] = "us") -> dict[str, np.ndarray]:
        """Every measured request's latency per op (``read``, ``write``, ``trim``, ``flush``), in completion order."""
        if self._latencies_ns is None:
            raise ValueError("this run did not keep per-request latencies: run it with keep_latencies=True")
        if unit not in ("us", "ns"):
            raise ValueError(f"unit must be 'us' or 'ns', not {unit!r}")
        ns = {op: np.frombuffer(b, dtype="<u8") for op, b in self._latencies_ns.items()}
        return ns if unit == "ns" else {op: a / 1000.0 for op, a in ns.items()}

    def timeseries(self, backend: Backend = "pandas") -> pandas.DataFrame | polars.DataFrame:
        """One row per time window (by arrival time); empty when the run had no window."""
        rows = self.summary.get("timeseries", [])
        return frame({c: np.array([r[c] for r in rows], dtype=_dtype(c)) for c in TIMESERIES_COLUMNS}, backend)

    def erase_counts(self, backend: Backend = "pandas") -> pandas.DataFrame | polars.DataFrame:
        """One row per block: its physical coordinates and life-time erase count."""
        return frame({c: np.frombuffer(self._erase_map[c], dtype="<u4") for c in ERASE_COLUMNS}, backend)


def _dtype(column: str) -> str:
    return "float64" if column.endswith(("_s", "_us")) else "uint64"
