"""streamgauge.read / streamgauge.tail against the real query API (the
`query` crate's `serve_query` example on loopback, with a demo domain
written by the store crate)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

import streamgauge
from streamgauge.http import ApiError

ROOT = Path(__file__).resolve().parents[2]


def _serve_query_binary() -> str:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    subprocess.run(["cargo", "build", "-q", "-p", "query", "--example", "serve_query"], cwd=ROOT, check=True)
    return str(target / "debug" / "examples" / "serve_query")


@pytest.fixture(scope="module")
def api():
    d = tempfile.TemporaryDirectory()
    p = subprocess.Popen([_serve_query_binary(), d.name, "--demo"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("listening "), line
        yield p, line.split()[1] + "/api/v1/domains/demo"
    finally:
        p.kill()
        p.wait()
        d.cleanup()


def test_read_has_exact_dtypes(api):
    _, url = api
    df = streamgauge.read(url, stream="demo_all")
    assert len(df) == 10
    assert str(df["u64"].dtype) == "UInt64"
    assert int(df["u64"][0]) == 18446744073709551615
    assert int(df["i64"][0]) == -9223372036854775808
    assert df["blb"][0] == b"\x00\xff"
    assert str(df["oml_ts_server"].dtype) == "datetime64[us, UTC]"
    assert df["oml_ts_server"][0].timestamp() == 1_700_000_001.5
    assert df["bol"].tolist()[:2] == [True, True]


def test_read_filters(api):
    _, url = api
    df = streamgauge.read(url + "/streams/demo_all", fields=["i32", "u64"], where="i32>=5", start=6, raw_timestamps=True)
    assert list(df.columns) == ["i32", "u64"]
    assert df["i32"].tolist() == [6, 7, 8, 9, 10]
    with pytest.raises(ApiError) as e:
        streamgauge.read(url, stream="nope")
    assert e.value.status == 404 and e.value.details["streams"] == ["demo_all"]


def test_tail_yields_new_rows(api):
    proc, url = api
    rows = []

    def consume():
        for r in streamgauge.tail(url, "demo_all", after=9, fields=["i32"]):
            rows.append(r)
            if len(rows) == 3:
                return

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    for _ in range(2):
        proc.stdin.write("\n")
        proc.stdin.flush()
    t.join(timeout=20)
    assert [r["oml_tuple_id"] for r in rows] == [10, 11, 12]
    assert rows[1] == {"oml_tuple_id": 11, "i32": 11}
