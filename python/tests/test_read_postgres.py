"""`streamgauge.read` from PostgreSQL gives the same frames as from SQLite.

The same Python client sends to two servers, one storing into a throwaway
PostgreSQL cluster (initdb into a temporary directory, owned by the
`postgres` user when running as root, on a free loopback port) and one
into SQLite; the frames read back must agree except for server times.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

import streamgauge

psycopg = pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")


def _bindir() -> Path | None:
    if os.environ.get("PG_BINDIR"):
        return Path(os.environ["PG_BINDIR"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, bindir: Path):
        self.bin = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="sg-pypg-"))
        self.port = _free_port()
        self.root = os.geteuid() == 0
        if self.root:
            shutil.chown(self.dir, "postgres", "postgres")
        d = str(self.dir)
        self._run([str(bindir / "initdb"), "-D", f"{d}/data", "-A", "trust", "-U", "postgres", "--no-sync",
                   "-E", "UTF8", "--locale=C.UTF-8"], "initdb.log")
        opts = f"-p {self.port} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run([str(bindir / "pg_ctl"), "-D", f"{d}/data", "-l", f"{d}/server.log", "-w", "-t", "60",
                   "-o", opts, "start"], "pg_ctl.log")
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as c:
            c.execute("CREATE ROLE oml LOGIN CREATEDB")

    def _run(self, argv, log):
        if self.root:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        with open(self.dir / log, "w") as out:
            r = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            logs = "".join(p.read_text(errors="replace") for p in self.dir.glob("*.log"))
            raise RuntimeError(f"{' '.join(argv)} failed:\n{logs}")

    def stop(self):
        try:
            self._run([str(self.bin / "pg_ctl"), "-D", f"{self.dir}/data", "-m", "immediate", "stop"],
                      "stop.log")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster():
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries are not installed (scripts/setup.sh installs them)")
    c = Cluster(bindir)
    yield c
    c.stop()


def _server(binary, data_dir: Path, extra):
    data_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [binary, "server", "--listen", "0", "--bind", "127.0.0.1", "-t", "0", "-D", str(data_dir)] + extra,
        stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r"addr=\S*:(\d+)", line)
        if "listening" in line and m:
            port = int(m.group(1))
            break
    assert port, "the server did not report its port"
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, f"tcp://127.0.0.1:{port}"


def _send(uri: str, domain: str):
    with streamgauge.Client("pgapp", domain=domain, sender="node-a", collect=uri) as c:
        c.metadata("site", "lab")
        mp = c.mp("probe", {"host": "string", "rtt": "double", "seq": "uint32", "big": "uint64"})
        mp.inject_metadata("unit", "ms", "rtt")
        for i in range(200):
            mp.inject((f"h{i % 7}", i * 0.25, i, 2**64 - 1 - i))


def _wait(read, want, timeout=20.0):
    """Reads until `want` rows and the stream's metadata (the `unit` the
    client declared) are stored: the server may commit them in either
    order, so a read between the two sees rows without their unit."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            df = read()
            keys = [m["key"] for m in df.attrs.get("metadata", [])]
            if len(df) >= want and "unit" in keys:
                return df
            last = f"{len(df)} rows, metadata {keys}"
        except Exception as e:  # the table may not exist yet
            last = repr(e)
        time.sleep(0.2)
    raise AssertionError(f"want {want} rows and their unit: {last}")


def test_postgresql_reads_like_sqlite(sg_bin, tmp_path, cluster):
    domain = f"pyread{os.getpid()}"
    pg_proc, pg_uri = _server(sg_bin, tmp_path / "pg", [
        "-b", "postgresql", "--pg-host", "127.0.0.1", "--pg-port", str(cluster.port), "--pg-user", "oml"])
    lite_proc, lite_uri = _server(sg_bin, tmp_path / "lite", [])
    try:
        _send(pg_uri, domain)
        _send(lite_uri, domain)
        conn = f"host=127.0.0.1 port={cluster.port} user=oml dbname={domain}"
        sq3 = tmp_path / "lite" / f"{domain}.sq3"
        pg = _wait(lambda: streamgauge.read(conn, "pgapp_probe"), 200)
        lite = _wait(lambda: streamgauge.read(sq3, "pgapp_probe"), 200)
    finally:
        for p in (pg_proc, lite_proc):
            p.terminate()
            p.wait(10)

    assert len(pg) == len(lite) == 200
    assert list(pg.columns) == list(lite.columns)
    for col in ("oml_sender", "oml_seq", "host", "rtt", "seq", "big"):
        assert list(pg[col]) == list(lite[col]), col
    assert pg["big"].iloc[0] == 2**64 - 1
    assert str(pg["big"].dtype) == "UInt64"
    assert str(pg["oml_ts_client"].dtype).startswith("datetime64")
    assert pg.attrs["schema"] == lite.attrs["schema"]
    assert [m["key"] for m in pg.attrs["metadata"]] == [m["key"] for m in lite.attrs["metadata"]]

    every = streamgauge.read(conn, metadata=True)
    assert "pgapp_probe" in every and "_experiment_metadata" in every
    assert "lab" in set(every["_experiment_metadata"]["value"])
