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
    "tail",
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
    """Read an experiment's results into pandas; see :func:`streamgauge.read.read`.

    ``source`` may also be a server's query API URL
    (``http://host:port/api/v1/domains/<domain>``, with ``stream=``): see
    :func:`streamgauge.http.read`."""
    if isinstance(source, str) and source.startswith(("http://", "https://")):
        from .http import read as _http_read

        stream = kwargs.pop("stream", table)
        return _http_read(source, stream, **kwargs)
    from .reader import read as _read

    return _read(source, table, **kwargs)


def tail(url, stream=None, **kwargs):
    """Iterate over new rows of a stream from a server's query API; see
    :func:`streamgauge.http.tail`."""
    from .http import tail as _tail

    return _tail(url, stream, **kwargs)
