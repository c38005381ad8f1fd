"""streamgauge from Python: measurement points backed by the Rust client.

    import streamgauge

    with streamgauge.Client("myapp", domain="exp1", collect="tcp://localhost:3003") as c:
        mp = c.mp("rtt", {"host": "string", "rtt_ms": "double"})
        mp.inject(("10.0.0.1", 0.42))

See docs/python.md for the API reference and the OML4Py migration guide.
"""

from __future__ import annotations

from .client import Client, Mp, schema_of
from .errors import ConfigError, Error, StateError, TypeError, ValueError
from . import _native
from ._native import type_names

__all__ = [
    "Client",
    "Mp",
    "schema_of",
    "read",
    "Error",
    "ConfigError",
    "TypeError",
    "ValueError",
    "StateError",
    "type_names",
    "decode",
]


def decode(data: bytes) -> dict:
    """Decodes an OMSP stream (header, then text or binary tuples, e.g. a
    ``file:`` destination's output or a capture) to
    ``{"events": [...], "errors": [...]}``, in the JSON form of
    ``streamgauge decode`` and ``spec/vectors``."""
    import json

    return json.loads(_native.decode(bytes(data)))


def read(source, table=None, **kwargs):
    """Read an experiment's results into pandas; see :func:`streamgauge.read.read`."""
    from .reader import read as _read

    return _read(source, table, **kwargs)
