"""Reading measurement CSVs: formats, metric detection, and every bad-input message."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corecast.model.curve.entities import InputError
from corecast.io.readers.measurements import read_measurements, read_table

DATASETS = Path(__file__).resolve().parent / "data" / "curves"  # copies of ../shared/datasets/*.csv


def write(tmp_path: Path, text: str, name: str = "m.csv") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------- good input


@pytest.mark.parametrize(
    "column, metric",
    [("time", "time"), ("seconds", "time"), ("throughput", "throughput"), ("ops", "throughput"),
     ("Time", "time"), ("OPS", "throughput")],
)
def test_named_value_column_sets_metric(tmp_path, column, metric):
    data = read_measurements(write(tmp_path, f"threads,{column}\n1,10\n2,6\n"))
    assert data.metric == metric
    assert data.counts.tolist() == [1, 2]
    assert data.values.tolist() == [10, 6]


def test_first_column_may_have_any_name(tmp_path):
    data = read_measurements(write(tmp_path, "processes,time\n4,2\n1,8\n"))
    assert data.counts.tolist() == [1, 4]  # sorted ascending
    assert data.values.tolist() == [8, 2]


def test_value_column_takes_metric_argument(tmp_path):
    path = write(tmp_path, "threads,value\n1,10\n2,6\n")
    assert read_measurements(path, "time").metric == "time"
    assert read_measurements(path, "throughput").metric == "throughput"


@pytest.mark.parametrize(
    "comment",
    [
        "# metric: time",
        "#metric:time",
        "# source: somewhere (a, b; c), metric: time, machine: x86 (2 sockets, 64 cores)",
        "# notes: value=seconds,   Metric: TIME  , extra",
    ],
)
def test_value_column_takes_metric_from_comment(tmp_path, comment):
    data = read_measurements(write(tmp_path, f"{comment}\nthreads,value\n1,10\n2,6\n"))
    assert data.metric == "time"


def test_metric_comment_may_follow_the_header(tmp_path):
    path = write(tmp_path, "threads,value\n# metric: throughput\n1,10\n2,16\n")
    assert read_measurements(path).metric == "throughput"


def test_argument_agreeing_with_column_or_comment_is_fine(tmp_path):
    assert read_measurements(write(tmp_path, "n,time\n1,3\n2,2\n"), "time").metric == "time"
    path = write(tmp_path, "# metric: throughput\nn,value\n1,3\n2,5\n", "c.csv")
    assert read_measurements(path, "throughput").metric == "throughput"


def test_repetitions_comments_blank_lines_and_whitespace(tmp_path):
    text = (
        "\ufeff# a comment\n\n"  # byte-order mark as spreadsheet exports write it
        " threads , time \n"
        "1, 10\n"
        "   \n"
        "1 ,12\n"
        "# between rows\n"
        "1,11\n"
        ",\n"
        "2,6\n"
    )
    data = read_measurements(write(tmp_path, text))
    assert data.counts.tolist() == [1, 2]
    assert data.values.tolist() == [11, 6]
    assert data.repetitions.tolist() == [3, 1]
    assert data.spread[0] == pytest.approx(1 / 11)


def test_stall_and_size_columns(tmp_path):
    text = (
        "threads,time,stall:lock,stall: mem ,size:n\n"
        "1,10,0,1,100\n"
        "2,6,1,1.5,100\n"
        "2,7,2,1.5,100\n"
        "1,40,0,4,400\n"
    )
    data = read_measurements(write(tmp_path, text))
    assert sorted(data.stalls) == ["lock", "mem"]
    assert list(data.sizes) == ["n"]
    target = data.at_target_size()
    assert target.counts.tolist() == [1]
    assert target.sizes["n"].tolist() == [400]
    small = data.subset(np.flatnonzero(data.sizes["n"] == 100))
    assert small.values.tolist() == [10, 6.5]
    assert small.stalls["lock"].tolist() == [0, 1.5]


def test_read_table_keeps_line_numbers_and_comment_items(tmp_path):
    table = read_table(write(tmp_path, "# source: x, metric: time\n\nthreads,time\n1,2\n\n2,1\n"))
    assert table.header == ["threads", "time"]
    assert table.header_line == 3
    assert [line for line, _ in table.rows] == [4, 6]
    assert (1, "metric", "time") in table.meta


def _dataset_files():
    return sorted(DATASETS.glob("*.csv"))


@pytest.mark.parametrize("path", _dataset_files(), ids=lambda p: p.name)
def test_shared_datasets_load_as_is(path):
    data = read_measurements(str(path))
    first = path.read_text().splitlines()[0]
    assert f"metric: {data.metric}" in first
    assert len(data) >= 2
    assert np.all(np.diff(data.counts) > 0)


# ---------------------------------------------------------------- bad input


BAD_TABLES = [
    # (file text, metric argument, words the message must contain)
    ("", None, "empty"),
    ("\n  \n\n", None, "empty"),
    ("# only a comment\n", None, "no header"),
    ("1,10\n2,5\n", None, "line 1: no header"),
    ("threads,time\n", None, "no data rows"),
    ("threads\n1\n2\n", None, "no value column"),
    ("threads,stall:x\n1,1\n", None, "no value column"),
    ("threads,time,bogus\n1,1,1\n", None, "unknown column 'bogus'"),
    ("threads,time,time\n1,1,1\n", None, "duplicate column 'time'"),
    ("threads,time,TIME\n1,1,1\n", None, "duplicate column"),
    ("threads,time,throughput\n1,1,1\n", None, "second value column"),
    ("threads,time,\n1,1,1\n", None, "empty column name"),
    ("threads,time,stall:\n1,1,1\n", None, "needs a name"),
    ("threads,time\n1,10\n2,5,3\n", None, "line 3: 3 cells"),
    ("threads,time\n1,10\n2\n", None, "line 3: 1 cell,"),
    ("threads,time\n1,10\n2,abc\n", None, "line 3: column 'time': 'abc' is not a number"),
    ("threads,time\n1,10\n2,\n", None, "line 3: column 'time': empty cell"),
    ("threads,time\none,10\n", None, "line 2: column 'threads': 'one' is not a number"),
    ("threads,time\n1,nan\n", None, "line 2: column 'time': 'nan' is not a finite"),
    ("threads,time\n1,inf\n", None, "not a finite"),
    ("threads,time\n1,-inf\n", None, "not a finite"),
    ("threads,time\ninf,1\n", None, "not a finite"),
    ("threads,time\n1,0\n", None, "line 2: column 'time': '0' must be positive"),
    ("threads,throughput\n1,-3\n", None, "must be positive"),
    ("threads,time\n0,1\n", None, "line 2: column 'threads': count '0' must be a whole number >= 1"),
    ("threads,time\n-2,1\n", None, "whole number >= 1"),
    ("threads,time\n1.5,1\n", None, "line 2: column 'threads': count '1.5' must be a whole number >= 1"),
    ("threads,time,stall:lock\n1,1,-1\n", None, "column 'stall:lock': '-1' must not be negative"),
    ("threads,time,size:n\n1,1,0\n", None, "column 'size:n': '0' must be positive"),
    ("threads,value\n1,10\n", None, "--metric"),
    ("threads,value\n1,10\n", None, "# metric:"),
    ("# metric: speed\nthreads,value\n1,10\n", None, "line 1: metric 'speed'"),
    ("# metric: time\n# metric: throughput\nthreads,value\n1,10\n", None, "conflicts"),
    ("# metric: throughput\nthreads,time\n1,10\n", None, "conflicts with column 'time'"),
    ("threads,time\n1,10\n", "throughput", "--metric throughput conflicts with column 'time'"),
    ("threads,ops\n1,10\n", "time", "--metric time conflicts"),
    ("# metric: time\nthreads,value\n1,10\n", "throughput", "--metric throughput conflicts"),
    ("threads,time\n1,10\n", "speed", "unknown metric"),
]


@pytest.mark.parametrize("text, metric, words", BAD_TABLES)
def test_bad_input_raises_one_line_naming_the_file(tmp_path, text, metric, words):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_measurements(path, metric)
    message = str(info.value)
    assert "\n" not in message
    assert words in message
    if metric != "speed":  # an unknown metric argument is not about the file
        assert message.startswith(path + ": ")


def test_missing_file(tmp_path):
    path = str(tmp_path / "nope.csv")
    with pytest.raises(InputError, match=r"nope\.csv: no such file"):
        read_measurements(path)


def test_directory(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        read_measurements(str(tmp_path))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path):
    path = write(tmp_path, "threads,time\n1,1\n")
    os.chmod(path, 0)
    with pytest.raises(InputError, match="permission denied"):
        read_measurements(path)


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("threads,time\n1,1\n# caf\u00e9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"line 3: not UTF-8"):
        read_measurements(str(path))


# ---------------------------------------------------------------- round trip

finite_values = st.floats(min_value=1e-9, max_value=1e12, allow_nan=False, allow_infinity=False)
tables = st.dictionaries(
    keys=st.integers(min_value=1, max_value=512),
    values=st.lists(finite_values, min_size=1, max_size=4),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables, metric=st.sampled_from(["time", "throughput"]), seed=st.integers(0, 2**16))
def test_written_tables_read_back_with_the_same_medians(tmp_path, table, metric, seed):
    rows = [(n, v) for n, vs in table.items() for v in vs]
    np.random.default_rng(seed).shuffle(rows)  # repetitions need not be adjacent
    text = f"threads,{metric}\n" + "".join(f"{n},{v!r}\n" for n, v in rows)
    data = read_measurements(write(tmp_path, text, "prop.csv"))
    assert data.metric == metric
    assert data.counts.tolist() == sorted(table)
    for n, value, reps in zip(data.counts, data.values, data.repetitions):
        assert reps == len(table[int(n)])
        assert value == pytest.approx(float(np.median(table[int(n)])), rel=1e-12)


# ---------------------------------------------------------------- JSON without the json package
# fileio's parse_json and json_text go through CPython's C scanner and encoder (the json
# package imports re and enum, which a --target-machine exit paid): the same values and
# the same text as the package, and its errors where the input is bad.
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_json_text_is_compact_strict_json_dumps(value):
    import json

    from corecast.io.fileio import json_text

    assert json_text(value) == json.dumps(value, separators=(",", ":"), allow_nan=False)


def test_json_text_refuses_what_json_dumps_refuses():
    from corecast.io.fileio import json_text

    with pytest.raises(ValueError):
        json_text({"speedup": [1.0, float("nan")]})
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_text({"x": object()})


@settings(max_examples=300, deadline=None)
@given(_json_values, st.sampled_from([None, 0, 2]), st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_parse_json_reads_what_json_loads_reads(value, indent, pad):
    import json

    from corecast.io.fileio import parse_json

    text = pad + json.dumps(value, indent=indent) + pad
    assert json.dumps(parse_json(text, "x.json")) == json.dumps(json.loads(text))


@pytest.mark.parametrize("text, words", [
    ("", "file is empty"),  # as the CSV reader says it (numa --sample said "Expecting value")
    (" \n", "file is empty"),
    ("{\"a\": 1,}", "line 1: column 9: not valid JSON: Expecting property name"),
    ("{} {}", "line 1: more than one JSON value"),
    ("\ufeff{}", "not valid JSON: Unexpected UTF-8 BOM"),
    ("[NaN, Infinity]", None),
])
def test_parse_json_errors_are_json_loads_errors(text, words):
    from corecast.io.fileio import parse_json

    if words is None:  # json.loads reads these: so does parse_json
        assert str(parse_json(text, "x.json")) == "[nan, inf]"
        return
    with pytest.raises(InputError) as e:
        parse_json(text, "x.json")
    assert str(e.value).startswith("x.json: ") and words in str(e.value)
