"""`streamgauge wrap` with the real ping and iperf3 on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest

import streamgauge
from conftest import have


def wrap(sg_bin, *args, timeout=60):
    return subprocess.run([sg_bin, "wrap", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not have("ping"), reason="ping not installed (iputils-ping)")
@pytest.mark.parametrize("dest,domain", [("127.0.0.1", "ping4"), ("::1", "ping6")])
def test_ping(sg_bin, server, dest, domain):
    r = wrap(sg_bin, "ping", "-c", "4", "-i", "0.2", "--oml-collect", server.uri, f"--oml-domain={domain}", "--oml-id", "n1", dest)
    assert r.returncode == 0, r.stderr
    assert "4 packets transmitted, 4 received" in r.stdout  # passed through
    server.wait_rows(domain, "ping_rtt", 4)
    server.wait_rows(domain, "ping_summary", 1)
    rtt = streamgauge.read(server.db(domain), "ping_rtt")
    assert list(rtt["icmp_seq"]) == [1, 2, 3, 4]
    assert set(rtt["addr"]) == {dest}
    assert set(rtt["dest"]) == {dest}
    assert (rtt["rtt_ms"] > 0).all() and (rtt["rtt_ms"] < 50).all()
    s = streamgauge.read(server.db(domain), "ping_summary").iloc[0]
    assert (s["transmitted"], s["received"], s["loss_pct"]) == (4, 4, 0.0)
    assert s["rtt_min_ms"] <= s["rtt_avg_ms"] <= s["rtt_max_ms"]
    assert s["rtt_avg_ms"] == pytest.approx(rtt["rtt_ms"].mean(), abs=0.002)
    meta = streamgauge.read(server.db(domain), "_experiment_metadata")
    kv = dict(zip(meta["key"], meta["value"]))
    assert kv["tool_version"].startswith("ping from iputils")
    assert kv["command_line"] == f"ping -c 4 -i 0.2 {dest}"


def test_ping_exit_status_passes_through(sg_bin):
    r = wrap(sg_bin, "ping", "--oml-noop", "-Z")
    assert r.returncode == 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not have("iperf3"), reason="iperf3 not installed")
@pytest.mark.parametrize("udp", [False, True], ids=["tcp", "udp"])
def test_iperf3_client_and_server(sg_bin, server, udp):
    port = str(free_port())
    dom = "iperf_udp" if udp else "iperf_tcp"
    oml = ["--oml-collect", server.uri, "--oml-domain", dom]
    srv = subprocess.Popen(
        [sg_bin, "wrap", "iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port, *oml, "--oml-id", "srv"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(0.5)
    extra = ["-u", "-b", "20M"] if udp else []
    cli = wrap(sg_bin, "iperf3", "-c", "127.0.0.1", "-p", port, "-t", "2", "-i", "0.5", *extra, *oml, "--oml-id", "cli")
    out, err = srv.communicate(timeout=30)
    assert cli.returncode == 0, cli.stderr + cli.stdout
    assert srv.returncode == 0, err
    own = json.loads(cli.stdout)  # the tool's own JSON, passed through
    server_json = json.loads(out)
    server.wait_rows(dom, "iperf3_summary", 4 if not udp else 6)
    server.wait_rows(dom, "iperf3_interval", len(own["intervals"]) + len(server_json["intervals"]))
    iv = streamgauge.read(server.db(dom), "iperf3_interval")
    sm = streamgauge.read(server.db(dom), "iperf3_summary")
    proto = "UDP" if udp else "TCP"
    assert set(iv["protocol"]) == {proto}
    for role, doc in (("client", own), ("server", server_json)):
        mine = sm[(sm["role"] == role)]
        for kind in ("sum_sent", "sum_received") + (("sum",) if udp else ()):
            row = mine[mine["kind"] == kind].iloc[0]
            assert row["bytes"] == doc["end"][kind]["bytes"]
            assert row["bits_per_second"] == pytest.approx(doc["end"][kind]["bits_per_second"])
        ivs = iv[iv["role"] == role]
        assert len(ivs) == len(doc["intervals"])
        assert list(ivs["bytes"]) == [x["sum"]["bytes"] for x in doc["intervals"]]
    client_iv = iv[iv["role"] == "client"]
    sent = sm[(sm["role"] == "client") & (sm["kind"] == "sum_sent")].iloc[0]
    # Interval bytes add up to the total the tool reported.
    assert client_iv["bytes"].sum() == pytest.approx(sent["bytes"], rel=0.02)
    assert sent["bytes"] > 0
    if udp:
        assert (client_iv["packets"] > 0).all()
    else:
        assert (client_iv["retransmits"] >= 0).all()
    meta = streamgauge.read(server.db(dom), "_experiment_metadata")
    assert "iperf 3" in " ".join(meta["value"].astype(str))


@pytest.mark.skipif(not have("vmstat"), reason="vmstat not installed (procps)")
def test_generic_regex_on_vmstat(sg_bin, server):
    regex = r"^\s*(?P<r>\d+)\s+(?P<b>\d+)\s+\d+\s+(?P<free>\d+)\s+\d+\s+\d+(?:\s+\d+){6}\s+(?P<us>\d+)\s+(?P<sy>\d+)\s+(?P<id>\d+)"
    r = wrap(
        sg_bin, "run", "--schema", "r:uint32 b:uint32 free:uint64 us:int32 sy:int32 id:int32",
        "--regex", regex, "--mp", "cpu", "--oml-collect", server.uri, "--oml-domain", "vm", "--",
        "vmstat", "-n", "1", "3",
    )
    assert r.returncode == 0, r.stderr
    server.wait_rows("vm", "vmstat_cpu", 3)
    df = streamgauge.read(server.db("vm"), "vmstat_cpu")
    assert len(df) == 3
    assert ((df["us"] + df["sy"] + df["id"]) <= 101).all()
    assert (df["free"] > 0).all()


def test_generic_jsonl_csv_and_exit_status(sg_bin, server):
    script = 'printf \'{"a": 1, "s": "x"}\\n{"a": 2, "s": "y"}\\nnoise\\n\'; exit 4'
    r = wrap(sg_bin, "run", "--schema", "a:int32 s:string", "--jsonl", "--app", "gen", "--oml-collect", server.uri, "--oml-domain", "gj", "--", "sh", "-c", script)
    assert r.returncode == 4
    assert "noise" in r.stdout
    server.wait_rows("gj", "gen_line", 2)
    df = streamgauge.read(server.db("gj"), "gen_line")
    assert list(df["a"]) == [1, 2] and list(df["s"]) == ["x", "y"]
    r = wrap(sg_bin, "run", "--schema", "x:double n:int64", "--csv", "--app", "gen", "--oml-collect", server.uri, "--oml-domain", "gc", "--", "sh", "-c", "echo n,x; echo 1,0.5; echo 2,1.5")
    assert r.returncode == 0, r.stderr
    server.wait_rows("gc", "gen_line", 2)
    df = streamgauge.read(server.db("gc"), "gen_line")
    assert list(df["n"]) == [1, 2] and list(df["x"]) == [0.5, 1.5]
