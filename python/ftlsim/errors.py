"""Exceptions raised by ftlsim: one class per kind of error of the Rust library.

Every class derives from :class:`FtlsimError`; the message is the same line
the ``ftlsim`` CLI prints, and the fields of the error are attributes (for
example ``ConfigError.key`` and ``TraceError.line``). The mapping from the
library's error kinds lives in ``crates/ftlsim-py/src/error.rs``.
"""

from __future__ import annotations


class FtlsimError(Exception):
    """Base of every ftlsim error."""


class ConfigError(FtlsimError, ValueError):
    """A configuration key is unknown, missing, mistyped or out of range (``.key``, ``.reason``)."""

    key: str
    reason: str


class TraceError(FtlsimError, ValueError):
    """A trace line could not be parsed (``.file``, ``.line``, ``.reason``).

    ``.line`` is 0 when the problem is the file as a whole: its format could
    not be detected (the message then names the lines examined).
    """

    file: str
    line: int
    reason: str


class WorkloadError(FtlsimError, ValueError):
    """A synthetic workload or preconditioning spec is malformed (``.key``, ``.reason``)."""

    key: str
    reason: str


class OutOfRangeError(FtlsimError, ValueError):
    """A request addresses sectors beyond the device under the ``error`` policy."""

    source: str
    request: int
    start: int
    end: int
    capacity: int


class PhysicsError(FtlsimError):
    """The NAND array refused an operation: an FTL bug, never bad input."""


class InvariantError(FtlsimError):
    """An FTL invariant failed: a bug, reported instead of a wrong number (``.ftl``, ``.reason``)."""

    ftl: str
    reason: str


class DeviceFullError(FtlsimError):
    """Every block is full of valid pages: the device cannot accept more data."""


class WornOutError(FtlsimError):
    """A block reached ``nand.endurance`` erases: the load and the FTL's write amplification wore the drive out.

    ``.block``, ``.endurance``, and ``.mean_erases`` (the drive's blocks'
    average: far below ``.endurance``, the wear is uneven).
    """

    block: int
    endurance: int
    mean_erases: float


class UnknownNameError(FtlsimError, LookupError):
    """A preset, config file, FTL or format that does not exist (``.what``, ``.name``, ``.available``)."""

    what: str
    name: str
    available: list[str]


class IoError(FtlsimError, OSError):
    """Reading or writing a file failed (``.filename``, ``.errno``, ``.strerror``)."""


class NotFoundError(IoError, FileNotFoundError):
    """A trace or config file does not exist; ``except FileNotFoundError`` catches it too."""


class InterruptedRunError(FtlsimError):
    """A run was stopped by its progress callback."""


class SweepError(FtlsimError, ValueError):
    """A sweep's arguments or spec file are malformed (``.key``, ``.reason``)."""

    key: str
    reason: str


def keyed(cls: type[ConfigError | WorkloadError | SweepError], prefix: str, key: str, reason: str) -> Exception:
    """An error raised on the Python side, shaped like the Rust library's: ``PREFIX: KEY: REASON``."""
    e = cls(f"{prefix}: {key}: {reason}")
    e.key, e.reason = key, reason
    return e
