"""`python -m streamgauge export` to CSV and Parquet."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

import streamgauge


@pytest.fixture
def db(server):
    with streamgauge.Client("ex", domain="ex", sender="s", collect=server.uri) as c:
        m = c.mp("m", {"i": "int32", "u": "uint64", "s": "string"})
        for i in range(10):
            m.inject((i, 2**64 - 1 - i, f"s{i}"))
    server.wait_rows("ex", "ex_m", 10)
    return server.db("ex")


def export(*args):
    return subprocess.run([sys.executable, "-m", "streamgauge", "export", *args], capture_output=True, text=True)


def test_csv(db, tmp_path):
    out = tmp_path / "m.csv"
    r = export(str(db), "--table", "ex_m", "--format", "csv", "-o", str(out))
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out)
    assert list(df["i"]) == list(range(10))
    assert str(2**64 - 1) in out.read_text()
    assert "oml_ts_client" in df.columns


def test_parquet(db, tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "m.parquet"
    r = export(str(db), "--table", "ex_m", "-o", str(out))
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(out)
    assert list(df["s"]) == [f"s{i}" for i in range(10)]


def test_unknown_table(db, tmp_path):
    r = export(str(db), "--table", "nope", "-o", str(tmp_path / "x.csv"))
    assert r.returncode == 2
    assert "no table" in r.stderr
