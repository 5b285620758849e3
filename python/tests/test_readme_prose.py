"""docs/readme/prose.toml, the README figures `scripts/readme-prose` reruns, still matches the README: every
claim well-formed and each quoted fragment in the README exactly once. Runs no simulation (the script does);
the loading and matching are the script's own functions."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "readme-prose"


def _script():
    loader = importlib.machinery.SourceFileLoader("readme_prose", str(SCRIPT))
    spec = importlib.util.spec_from_loader("readme_prose", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


rp = _script()
CLAIMS = rp.load_claims()


def test_claims_are_well_formed():
    names = [c["name"] for c in CLAIMS]
    assert len(names) == len(set(names))
    for c in CLAIMS:
        assert set(rp.REQUIRED) <= set(c) <= set(rp.REQUIRED + rp.OPTIONAL), c["name"]
        assert re.search(r"\d", c["quoted"]), f"{c['name']}: quoted text holds no figure"


@pytest.mark.parametrize("claim", CLAIMS, ids=[c["name"] for c in CLAIMS])
def test_quoted_once_in_readme(claim):
    readme = rp.readme_text()
    assert rp.quote_count(claim, readme) == 1, f"README does not quote {rp.normalise(claim['quoted'])!r} exactly once"


def test_normalise_joins_wrapped_prose():
    assert rp.normalise("  read p99\n  0.88 ms,\tmax ") == "read p99 0.88 ms, max"


def test_bad_claims_are_named(tmp_path):
    bad = tmp_path / "prose.toml"
    bad.write_text('[[claim]]\nname = "x"\nargs = ["run"]\nvalue = "iops"\nformat = "{:.0f}"\n')
    with pytest.raises(rp.ClaimError, match=r"'x'.*missing key 'quoted'"):
        rp.load_claims(bad)
    bad.write_text('[[claim]]\nname = "x"\nargs = ["run"]\nvalue = "iops +"\nformat = "{:.0f}"\nquoted = "1"\n')
    with pytest.raises(rp.ClaimError, match=r"'x'.*key 'value'"):
        rp.load_claims(bad)
    bad.write_text('[[claim]]\nname = "x"\nargs = ["run"]\nvalue = "iops"\nformat = "{:.0f}"\nquoted = "1"\nq = 1\n')
    with pytest.raises(rp.ClaimError, match=r"'x'.*unknown key 'q'"):
        rp.load_claims(bad)


def test_evaluate_formats_a_report_field():
    claim = {"name": "x", "value": 'latency_us["read"]["p99"] / 1000', "format": "{:.2f}"}
    assert rp.evaluate(claim, {"latency_us": {"read": {"p99": 880.4}}}) == "0.88"
    with pytest.raises(rp.ClaimError, match="'x'"):
        rp.evaluate(claim, {"iops": 1.0})


def test_a_figure_counts_only_as_a_whole_number():
    assert rp.quotes_figure("static allocation 10.04.", "10.04")
    assert rp.quotes_figure("read p99\n2.4 ms", "2.4")
    assert not rp.quotes_figure("read p99 12.4 ms", "2.4")
    assert not rp.quotes_figure("read p99 2.45 ms", "2.4")
    assert not rp.quotes_figure("1,143 IOPS", "143")
