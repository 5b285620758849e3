"""Bad input raises a specific ftlsim exception naming the key, file or line; never a crash."""

from __future__ import annotations

import pytest
from conftest import CONFIG, ROOT, SMALL
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlsim
from ftlsim import errors

W = "rw=randwrite,bs=4k,ios=100"


def run(**kw):
    args = {"workload": W, "overrides": SMALL}
    return ftlsim.run(CONFIG, **{**args, **kw})


@pytest.mark.parametrize(
    ("overrides", "key", "words"),
    [
        ({"geometry.chanels": 4}, "geometry.chanels", "unknown field"),
        ({"geometry.channels": "four"}, "geometry.channels", "string"),
        ({"geometry.page_size": 1000}, "geometry.page_size", "multiple of 512"),
        ({"gc.policy": "lru"}, "gc.policy", "greedy"),
        ({"overprovisioning": -1.0}, "overprovisioning", "(0, 10]"),
        ({"gc.threshold": float("nan")}, "gc.threshold", "fraction"),
        ({"gc.policy": {"nested": 1}}, "gc.policy", "no TOML form"),
    ],
)
def test_config_errors_name_the_key(overrides, key, words):
    with pytest.raises(ftlsim.ConfigError) as e:
        run(overrides={**SMALL, **overrides})
    assert e.value.key == key and words in str(e.value), str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, ftlsim.FtlsimError)


def test_bad_config_file_names_file_and_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\n[geometry]\nchannels = = 2\n')
    with pytest.raises(ftlsim.ConfigError) as e:
        ftlsim.run(p, workload=W)
    assert e.value.key == f"{p}:3" and "invalid TOML" in e.value.reason


def test_dict_config_errors():
    with pytest.raises(ftlsim.ConfigError, match="missing field `read_us`") as e:
        ftlsim.run({"timing": {}}, workload=W)
    assert e.value.key == "timing"
    with pytest.raises(ftlsim.ConfigError, match="config dict"):
        ftlsim.run({"geometry": object()}, workload=W)


@pytest.mark.parametrize(
    ("kw", "what", "name"),
    [
        ({"ftl": "nope"}, "FTL", "nope"),
        ({"format": "nope", "trace": "x.csv", "workload": None}, "trace format", "nope"),
    ],
)
def test_unknown_names_list_the_available_ones(kw, what, name):
    with pytest.raises(ftlsim.UnknownNameError) as e:
        run(**kw)
    assert e.value.name == name and e.value.available and isinstance(e.value, LookupError)
    assert what.split()[-1].lower() in e.value.what.lower()


def test_unknown_preset():
    with pytest.raises(ftlsim.UnknownNameError) as e:
        ftlsim.run("no-such-drive", workload=W)
    assert "hat-table4" in e.value.available


def test_missing_trace_is_a_file_not_found_error(tmp_path):
    missing = tmp_path / "missing.csv"
    with pytest.raises(FileNotFoundError) as e:
        ftlsim.run(CONFIG, trace=missing, format="msr", overrides=SMALL)
    assert isinstance(e.value, ftlsim.NotFoundError) and isinstance(e.value, ftlsim.IoError)
    assert e.value.filename == str(missing) and e.value.errno == 2


def test_bad_trace_line_names_file_and_line(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("0,W,0,8\n1000,W,8,8\n2000,X,16,8\n")
    with pytest.raises(ftlsim.TraceError) as e:
        ftlsim.run(CONFIG, trace=p, format="csv", overrides=SMALL)
    assert e.value.file == str(p) and e.value.line == 3 and e.value.reason
    r = ftlsim.run(CONFIG, trace=p, format="csv", overrides=SMALL, skip_bad_lines=True)
    assert r.summary["input"]["skipped_lines"] == 1 and r.summary["requests"] == 2


def test_out_of_range_request(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("0,W,0,8\n1000,W,999999999999,8\n")
    with pytest.raises(ftlsim.OutOfRangeError) as e:
        ftlsim.run(CONFIG, trace=p, format="csv", overrides=SMALL)
    assert e.value.request == 1 and e.value.start == 999999999999 and e.value.capacity > 0


@pytest.mark.parametrize(
    ("kw", "key"),
    [
        ({"workload": "rw=bogus"}, "rw"),
        ({"workload": "rw=randwrite,ios=many"}, "ios"),
        ({"precondition": "fill=2"}, "precondition.fill"),
        ({"precondition": 7}, "precondition"),
    ],
)
def test_workload_errors_name_the_key(kw, key):
    with pytest.raises(ftlsim.WorkloadError) as e:
        run(**kw)
    assert e.value.key == key


def test_input_must_be_exactly_one():
    with pytest.raises(ftlsim.ConfigError, match="exactly one"):
        ftlsim.run(CONFIG)
    with pytest.raises(ftlsim.ConfigError, match="exactly one"):
        ftlsim.run(CONFIG, workload=W, trace="x")


def test_a_worn_out_drive_raises_worn_out_error_with_the_block_and_the_mean():
    # Steady-state random writes on a drive whose blocks survive 3 erases.
    with pytest.raises(ftlsim.WornOutError) as e:
        run(precondition="fill=1.0,overwrite=1.0", overrides={**SMALL, "nand.endurance": 3})
    assert e.value.endurance == 3 and 0 < e.value.mean_erases <= 3 and e.value.block >= 0
    assert str(e.value).startswith(f"drive worn out: block {e.value.block} reached nand.endurance (3 erases;")


def test_every_rust_error_kind_has_its_own_class():
    kinds = [
        "ConfigError",
        "TraceError",
        "WorkloadError",
        "OutOfRangeError",
        "PhysicsError",
        "InvariantError",
        "DeviceFullError",
        "WornOutError",
        "IoError",
        "NotFoundError",
        "UnknownNameError",
        "InterruptedRunError",
    ]
    classes = {getattr(errors, k) for k in kinds}
    assert len(classes) == len(kinds) and all(issubclass(c, ftlsim.FtlsimError) for c in classes)
    source = (ROOT / "crates" / "ftlsim-py" / "src" / "error.rs").read_text()
    assert all(f'"{k}"' in source for k in kinds)


scalars = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.booleans(),
    st.lists(st.integers(-5, 5), max_size=3),
)


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(
        [
            "geometry.channels",
            "timing.read_us",
            "gc.policy",
            "overprovisioning",
            "host.queue_depth",
            "ftl.stripe_order",
            "nand.endurance",
            "gc.d",
        ]
    ),
    value=scalars,
)
def test_any_override_value_is_accepted_or_a_config_error(key, value):
    try:
        text = ftlsim.resolve_config(CONFIG, {**SMALL, key: value})
    except ftlsim.ConfigError as e:
        assert e.key.startswith(key.split(".")[0]) or e.key == "geometry", (e.key, key)
    else:
        assert text.startswith('name = "hat-table4"')


@settings(max_examples=40, deadline=None)
@given(op=st.floats(min_value=0.01, max_value=10.0, allow_nan=False), policy=st.sampled_from(["greedy", "fifo"]))
def test_override_values_round_trip_exactly(op, policy):
    import tomllib

    cfg = tomllib.loads(ftlsim.resolve_config(CONFIG, {"overprovisioning": op, "gc.policy": policy}))
    assert cfg["overprovisioning"] == op and cfg["gc"]["policy"] == policy
