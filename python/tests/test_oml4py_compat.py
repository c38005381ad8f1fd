"""An unmodified OML4Py script, with only its import changed, against the
real server; and the same script given a configuration file with filters."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

# The OML4Py-style script, as a user wrote it for the PyPI package; only the
# import line differs.
SCRIPT = r'''
import sys
from streamgauge.oml4py import OMLBase

N = int(sys.argv[2])
oml = OMLBase("pyapp", sys.argv[3], "pynode", "tcp:127.0.0.1:%s" % sys.argv[1])
oml.addmp("rtt", "seq:int32 rtt:double host:string")
oml.addmp("ctr", "packets:uint64 label:string")
oml.start()
oml.inject_metadata(None, "hostname", "node-1")
oml.inject_metadata("rtt", "unit", "ms", "rtt")
for i in range(N):
    oml.inject("rtt", [i - 100, i * 0.5 + 0.125, "h\t%d" % i])
for i in range(N):
    oml.inject("ctr", [2**64 - 1 - i, "c%d" % i])
oml.close()
print("leftover args:", sys.argv[4:])
'''

N = 200


def run(tmp_path, port, domain, *extra, env=None):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    return subprocess.run(
        [sys.executable, str(script), str(port), str(N), domain, *extra],
        capture_output=True, text=True, timeout=60, env=env,
    )


def test_unmodified_script(server, tmp_path):
    r = run(tmp_path, server.port, "compat")
    assert r.returncode == 0, r.stderr
    assert "ERROR" not in r.stderr, r.stderr
    server.wait_rows("compat", "pyapp_rtt", N)
    server.wait_rows("compat", "pyapp_ctr", N)
    con = sqlite3.connect(server.db("compat"))
    rows = con.execute("SELECT seq, rtt, host FROM pyapp_rtt ORDER BY oml_seq").fetchall()
    assert rows[0] == (-100, 0.125, "h\t0")
    assert rows[-1] == (N - 1 - 100, (N - 1) * 0.5 + 0.125, f"h\t{N - 1}")
    meta = con.execute("SELECT subject, key, value FROM _experiment_metadata WHERE oml_sender_id IS NOT NULL").fetchall()
    assert (".", "hostname", "node-1") in meta
    assert (".pyapp_rtt.rtt", "unit", "ms") in meta
    import streamgauge

    ctr = streamgauge.read(server.db("compat"), "pyapp_ctr")
    assert ctr["packets"].iloc[0] == 2**64 - 1


def test_filters_and_oml_options_through_argv(server, tmp_path):
    cfg = tmp_path / "f.xml"
    cfg.write_text(
        f'<omlc domain="ignored"><collect url="tcp://127.0.0.1:{server.port}">'
        '<stream mp="rtt" samples="50"><filter field="rtt" operation="avg"/></stream>'
        "</collect></omlc>"
    )
    r = run(tmp_path, server.port, "compatf", "--oml-config", str(cfg), "keep-me")
    assert r.returncode == 0, r.stderr
    assert "leftover args: ['keep-me']" in r.stdout
    server.wait_rows("compatf", "pyapp_rtt", N // 50)
    con = sqlite3.connect(server.db("compatf"))
    avgs = [r[0] for r in con.execute("SELECT rtt_avg FROM pyapp_rtt ORDER BY oml_seq")]
    assert len(avgs) == N // 50
    assert avgs[0] == pytest.approx(sum(i * 0.5 + 0.125 for i in range(50)) / 50)


def test_argument_handling_like_oml4py(tmp_path, monkeypatch, capsys):
    from streamgauge.oml4py import OMLBase

    monkeypatch.setattr(sys, "argv", ["s", "--oml-id", "argid", "x", "--oml-domain=argdom", "--oml-collect", f"file:{tmp_path / 'o'}"])
    monkeypatch.setenv("OML_DOMAIN", "envdom")
    OMLBase.args = None
    o = OMLBase("app")
    assert sys.argv == ["s", "x"]
    assert (o.domain, o.sender, o.uri) == ("argdom", "argid", f"file:{tmp_path / 'o'}")
    o2 = OMLBase("app", "given", "snd", "tcp:localhost")
    assert (o2.domain, o2.sender, o2.uri) == ("given", "snd", "tcp://localhost:3003")
    monkeypatch.delenv("OML_DOMAIN")
    monkeypatch.delenv("OML_NAME", raising=False)
    monkeypatch.setattr(sys, "argv", ["s"])
    o3 = OMLBase("app")  # no domain, no sender: disabled, prints to stdout
    assert not o3.oml
    o3.addmp("m", "a:int32")
    o3.start()
    o3.inject("m", [1])
    err = capsys.readouterr()
    assert "No experimental domain" in err.err
    bad = OMLBase("bad-name", "d", "s", f"file:{tmp_path / 'p'}")
    assert not bad.oml
