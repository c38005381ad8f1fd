"""The native client: Python → real `streamgauge server` → `streamgauge.read`."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated

import pandas as pd
import pytest

import streamgauge


@dataclasses.dataclass
class Probe:
    host: str
    rtt: float
    seq: Annotated[int, "uint32"]
    ok: bool


def test_round_trip(server):
    with streamgauge.Client("pyapp", domain="rt", sender="n1", collect=server.uri) as c:
        c.metadata("hostname", "node-1")
        probe = c.mp("probe", Probe)
        big = c.mp("big", {"u": "uint64", "v": "[double]", "b": "blob"})
        probe.inject_metadata("unit", "ms", "rtt")
        for i in range(100):
            probe.inject(Probe(f"h{i}", i * 0.5, i, i % 2 == 0))
        probe.inject(("tuple", 1.0, 1, True))
        probe.inject({"host": "dict", "rtt": 2.0, "seq": 2, "ok": False})
        probe.inject("args", 3, 3, True)  # an int for a double is fine
        big.inject((2**64 - 1, [1.0, 2.5], b"\x00\x01"))
        big.inject((5, [], b""))
    server.wait_rows("rt", "pyapp_probe", 103)
    server.wait_rows("rt", "pyapp_big", 2)

    df = streamgauge.read(server.db("rt"), "pyapp_probe")
    assert len(df) == 103
    assert list(df["host"][:2]) == ["h0", "h1"]
    assert df["rtt"].iloc[99] == pytest.approx(49.5)
    assert set(df["oml_sender"]) == {"n1"}
    assert isinstance(df["oml_ts_client"].dtype, pd.DatetimeTZDtype)
    now = pd.Timestamp.now(tz="UTC")
    assert abs((df["oml_ts_client"].iloc[0] - now).total_seconds()) < 120
    assert df.attrs["schema"]["seq"] == "uint32"
    assert any(m["key"] == "unit" for m in df.attrs["metadata"])

    big_df = streamgauge.read(server.db("rt"), "pyapp_big")
    assert list(big_df["u"]) == [2**64 - 1, 5]

    every = streamgauge.read(server.db("rt"), metadata=True)
    assert {"pyapp_probe", "pyapp_big", "_experiment_metadata"} <= set(every)
    meta = every["_experiment_metadata"]
    assert "node-1" in set(meta["value"])


def test_feedback_from_the_server_thins_a_stream(sg_bin, tmp_path):
    import socket
    import subprocess
    import time

    from conftest import Server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        metrics = f"127.0.0.1:{s.getsockname()[1]}"
    srv = Server(sg_bin, tmp_path / "data", ["--metrics", metrics])
    try:
        with pytest.raises(streamgauge.ConfigError, match="backchannel"):
            streamgauge.Client("pyapp", collect=srv.uri, backchannel="sometimes")

        def control(*args):
            return subprocess.run([sg_bin, "control", "--metrics", metrics, *args],
                                  capture_output=True, text=True, timeout=30)

        with streamgauge.Client("pyapp", domain="fb", sender="py1", collect=srv.uri,
                                backchannel="feedback") as c:
            m = c.mp("m", {"i": "int32"})
            for i in range(50):
                m.inject((i,))
            deadline = time.time() + 15
            while "py1" not in control("status").stdout:
                assert time.time() < deadline, "the client never showed up as a feedback sender"
                time.sleep(0.1)
            r = control("send", "fb", "py1", "set-samples", "stream=pyapp_m", "samples=10")
            assert r.returncode == 0, r.stderr
            while True:  # applied once the answer is stored
                meta = streamgauge.read(srv.db("fb"), "_experiment_metadata")
                if ((meta["key"] == "streamgauge_control") & (meta["value"] == "1 ok")).any():
                    break
                assert time.time() < deadline, "the client's answer was never stored"
                time.sleep(0.1)
            for i in range(50, 150):
                m.inject((i,))
        # All 50 before the change, then the first of every 10.
        n = srv.wait_rows("fb", "pyapp_m", 60)
        time.sleep(0.5)
        df = streamgauge.read(srv.db("fb"), "pyapp_m")
        assert len(df) == 60, n
        assert list(df["i"][50:]) == list(range(50, 150, 10))
    finally:
        srv.stop()


def test_type_errors_raise_and_never_crash(tmp_path):
    c = streamgauge.Client("app", collect=f"file:{tmp_path / 'out'}")
    mp = c.mp("m", "a:int32 b:string")
    with pytest.raises(streamgauge.StateError):
        mp.inject((1, "x"))
    c.start()
    with pytest.raises(streamgauge.TypeError):
        mp.inject(("1", "x"))
    with pytest.raises(TypeError):  # also a built-in TypeError
        mp.inject((2**40, "x"))
    with pytest.raises(streamgauge.TypeError, match="2 fields but 3"):
        mp.inject((1, "x", 3))
    with pytest.raises(streamgauge.TypeError):
        mp.inject({"a": 1})
    with pytest.raises(streamgauge.Error):
        c.mp("bad name", {"a": "int32"})
    with pytest.raises(streamgauge.TypeError):
        c.mp("m2", {"a": "int"})
    mp.inject((1, "fine"))
    c.close()
    with pytest.raises(streamgauge.StateError):
        mp.inject((1, "x"))
    assert issubclass(streamgauge.TypeError, streamgauge.Error)


def test_argv_options_are_removed_and_kwargs_win(tmp_path):
    argv = ["prog", "--oml-domain", "fromargv", "-v", "--oml-id=me", "--oml-collect", "file:/dev/null", "x"]
    c = streamgauge.Client("prog", argv=argv)
    assert c.argv == ["prog", "-v", "x"]
    assert (c.domain, c.sender) == ("fromargv", "me")
    c2 = streamgauge.Client("prog", domain="kw", argv=argv)
    assert c2.domain == "kw"
    with pytest.raises(streamgauge.ConfigError):
        streamgauge.Client("prog", argv=["prog", "--oml-bogus"])
    noop = streamgauge.Client("prog", argv=["prog", "--oml-noop"])
    assert not noop.enabled
    with noop:
        noop.mp("m", {"a": "int32"}).inject((1,))


def test_config_file_filters_and_two_destinations(server, tmp_path):
    out = tmp_path / "copy.txt"
    cfg = tmp_path / "exp.toml"
    cfg.write_text(
        f"""
domain = "cfg"
[[collect]]
url = "{server.uri}"
[[collect.stream]]
mp = "m"
samples = 10
[[collect.stream.filter]]
field = "x"
operation = "avg"
[[collect]]
url = "file:{out}"
encoding = "text"
"""
    )
    c = streamgauge.Client("fapp", sender="s", config=cfg)
    m = c.mp("m", {"x": "double"})  # streams named in the file: define MPs before start
    with c:
        for i in range(100):
            m.inject((float(i),))
    server.wait_rows("cfg", "fapp_m", 10)
    df = streamgauge.read(server.db("cfg"), "fapp_m")
    assert len(df) == 10
    assert "x_avg" in df.columns
    assert df["x_avg"].iloc[0] == pytest.approx(4.5)
    text = out.read_text()
    assert "fapp_m" in text and "\n99\t" not in text


def test_late_mp_and_stats(server):
    c = streamgauge.Client("late", domain="late", sender="s", collect=server.uri).start()
    a = c.mp("a", {"v": "int64"})
    for i in range(1000):
        a.inject((i,))
    c.close()
    st = c.stats()
    assert st["injected"] == 1000
    assert st["dropped_at_inject"] == 0
    server.wait_rows("late", "late_a", 1000)
