from collections.abc import Sequence

__version__: str

def run(
    name: str,
    overrides: Sequence[str],
    *,
    text: str | None = None,
    json: str | None = None,
    trace: str | None = None,
    format: str | None = None,
    skip_bad_lines: bool = False,
    workload: str | None = None,
    precondition: str | None = None,
    keep_latencies: bool = False,
    default_window_ms: float | None = None,
    snapshot_dir: str | None = None,
) -> dict[str, object]: ...
def resolve_config(name: str, overrides: Sequence[str], text: str | None = None, json: str | None = None) -> str: ...
def presets() -> list[str]: ...
def ftls() -> list[str]: ...
def formats() -> list[str]: ...
