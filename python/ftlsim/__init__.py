"""ftlsim: a trace-driven SSD simulator for flash translation layer research.

The simulation runs in Rust (``ftlsim._native``); this package converts
arguments and results::

    import ftlsim
    r = ftlsim.run("hat-table4", workload="rw=randwrite,bs=4k,ios=100000,iodepth=32",
                   precondition="fill=1.0,overwrite=0.5", overrides={"gc.policy": "fifo"})
    r.summary["write_amplification"], r.latencies()["write"], r.timeseries(), r.erase_counts()

    df = ftlsim.sweep("hat-table4", grid={"overprovisioning": [0.07, 0.28]},
                      workloads=["rw=randwrite,bs=4k,ios=100000"], path="sweep.parquet")

Plots are in :mod:`ftlsim.plot` (matplotlib, imported on first use). Every
error is a subclass of :class:`ftlsim.FtlsimError` (see :mod:`ftlsim.errors`).
"""

from __future__ import annotations

from typing import Any

from . import _native
from ._api import Result, resolve_config, run
from ._sweep import sweep
from .errors import (
    ConfigError,
    DeviceFullError,
    FtlsimError,
    InterruptedRunError,
    InvariantError,
    IoError,
    NotFoundError,
    OutOfRangeError,
    PhysicsError,
    SweepError,
    TraceError,
    UnknownNameError,
    WorkloadError,
    WornOutError,
)

__version__: str = _native.__version__

__all__ = [
    "ConfigError",
    "DeviceFullError",
    "FtlsimError",
    "InterruptedRunError",
    "InvariantError",
    "IoError",
    "NotFoundError",
    "OutOfRangeError",
    "PhysicsError",
    "Result",
    "SweepError",
    "TraceError",
    "UnknownNameError",
    "WorkloadError",
    "WornOutError",
    "__version__",
    "formats",
    "ftls",
    "presets",
    "resolve_config",
    "run",
    "sweep",
]


def presets() -> list[str]:
    """Names of the compiled-in device presets."""
    return _native.presets()


def ftls() -> list[str]:
    """Names of the FTL schemes."""
    return _native.ftls()


def formats() -> list[str]:
    """Names of the trace formats (``csv`` also takes ``csv:MAPPING``)."""
    return _native.formats()


def __getattr__(name: str) -> Any:
    # matplotlib is imported on first use of ftlsim.plot, not with ftlsim.
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'ftlsim' has no attribute {name!r}")
