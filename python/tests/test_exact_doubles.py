"""Binary doubles from Python are exact into our server (spec/omsp.md §3.8).

The package encodes through the Rust client core, which offers exact doubles
to binary TCP receivers by default; the reference's 30-bit encoding would
store 0.1 as 0.0999999999767169 and 1e300 or -2.5e-308 as NULL.
"""

from __future__ import annotations

import math
import sqlite3

import streamgauge

VALUES = [1e300, -2.5e-308, 0.1, 5e-324, -4.9e-310, math.pi, 1 / 3, math.inf, -math.inf]


def _stored(server, domain: str) -> list[float]:
    con = sqlite3.connect(f"file:{server.db(domain)}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("SELECT v FROM pyapp_m ORDER BY oml_seq")]
    finally:
        con.close()


def test_binary_doubles_are_stored_exactly(server):
    with streamgauge.Client("pyapp", domain="exact", sender="n1", collect=server.uri, encoding="binary") as c:
        m = c.mp("m", {"v": "double"})
        for v in VALUES:
            m.inject((v,))
    server.wait_rows("exact", "pyapp_m", len(VALUES))
    assert _stored(server, "exact") == VALUES


def test_switched_off_binary_doubles_are_the_reference_values(server, monkeypatch):
    monkeypatch.setenv("OML_EXACT_DOUBLES", "off")
    with streamgauge.Client("pyapp", domain="plain", sender="n1", collect=server.uri, encoding="binary") as c:
        m = c.mp("m", {"v": "double"})
        m.inject((0.1,))
    server.wait_rows("plain", "pyapp_m", 1)
    assert _stored(server, "plain") == [0.09999999997671694]
