"""Reading stored streams from a running server's query API (``/api/v1/``).

``read("http://host:port/api/v1/domains/<domain>", stream="<stream>")``
fetches the rows as Apache Arrow and returns a pandas DataFrame with exact
dtypes; ``tail(...)`` yields new rows as they are committed (Server-Sent
Events, resumed after the last id on reconnection). See docs/query-api.md.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from .errors import Error


class ApiError(Error):
    """The query API answered with an error (``status``, ``code``, ``details``)."""

    def __init__(self, status: int, code: str, message: str, details=None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.details = details


class LaggedError(Error):
    """A tail fell too far behind and was closed by the server; fetch the
    gap with ``read(..., after=resume_after)`` and tail again."""

    def __init__(self, message: str, resume_after: int):
        super().__init__(message)
        self.resume_after = resume_after


def _rows_url(url: str, stream: str | None, what: str) -> str:
    """``…/domains/<d>`` + stream, ``…/streams/<s>`` or ``…/rows`` → the
    ``rows`` (or ``tail``) endpoint."""
    base = url.split("?", 1)[0].rstrip("/")
    for suffix in ("/rows", "/tail"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    if "/streams/" not in base:
        if not stream:
            raise Error("name the stream: stream=... (or give a …/streams/<stream> URL)")
        base = f"{base}/streams/{urllib.parse.quote(stream)}"
    return f"{base}/{what}"


def _params(start=None, end=None, fields=None, where=None, sender=None, time=None, **extra):
    p = []
    if start is not None:
        p.append(("from", _bound(start)))
    if end is not None:
        p.append(("to", _bound(end)))
    if fields:
        p.append(("fields", fields if isinstance(fields, str) else ",".join(fields)))
    for w in [where] if isinstance(where, str) else (where or []):
        p.append(("where", w))
    for s in [sender] if isinstance(sender, (str, int)) else (sender or []):
        p.append(("sender", str(s)))
    if time:
        p.append(("time", time))
    p.extend((k, str(v)) for k, v in extra.items() if v is not None)
    return p


def _bound(v) -> str:
    """Seconds after the start, or an instant (datetime / pandas Timestamp / ISO text)."""
    if hasattr(v, "isoformat"):
        if getattr(v, "tzinfo", None) is None:
            raise Error("give time bounds with a time zone (naive datetimes are ambiguous)")
        return v.isoformat()
    return str(v)


def _open(url: str, token: str | None, headers=None):
    req = urllib.request.Request(url, headers=dict(headers or {}))
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        return urllib.request.urlopen(req)
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            err = json.loads(body)["error"]
            raise ApiError(e.code, err.get("code", ""), err.get("message", ""), err.get("details")) from None
        except (ValueError, KeyError, TypeError):
            raise ApiError(e.code, "http_error", body.decode(errors="replace")) from None


def _dtypes():
    import pandas as pd
    import pyarrow as pa

    return {
        pa.uint64(): pd.UInt64Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.uint32(): pd.UInt32Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.bool_(): pd.BooleanDtype(),
    }.get


def read(url: str, stream: str | None = None, *, start=None, end=None, fields=None, where=None,
         sender=None, time: str | None = None, raw_timestamps: bool = False, after: int | None = None,
         token: str | None = None):
    """Rows of ``stream`` as a pandas DataFrame, through the query API.

    ``url`` is ``http://host:port/api/v1/domains/<domain>`` (with
    ``stream=``) or a ``…/streams/<stream>`` URL. ``start``/``end`` are
    seconds after the experiment start or timezone-aware datetimes;
    ``fields``, ``where`` (``"rtt>10"`` or a list), ``sender`` and ``time``
    (``server``/``client``) are the API's parameters. Integers keep exact
    nullable dtypes (uint64 and guid as ``UInt64``, above 2^63−1 too),
    timestamps are UTC ``datetime64`` unless ``raw_timestamps``; blobs are
    ``bytes``. ``attrs["schema"]`` maps fields to their Arrow types.
    """
    import pyarrow as pa

    params = _params(start, end, fields, where, sender, time, after=after)
    params.append(("format", "arrow"))
    if raw_timestamps:
        params.append(("timestamps", "raw"))
    url = _rows_url(url, stream, "rows") + "?" + urllib.parse.urlencode(params)
    with _open(url, token) as resp:
        table = pa.ipc.open_stream(resp).read_all()
    df = table.to_pandas(types_mapper=_dtypes())
    df.attrs["schema"] = {f.name: str(f.type) for f in table.schema}
    return df


def tail(url: str, stream: str | None = None, *, after: int | None = None, fields=None, where=None,
         sender=None, token: str | None = None, int64_string: bool = False):
    """Yields each new row (a dict with ``oml_tuple_id`` first) as the server
    commits it; reconnects after dropped connections, resuming after the
    last row seen. Without ``after`` it starts at the stream's current end.
    Raises :class:`LaggedError` if the server closes a client that fell
    too far behind."""
    last = after
    while True:
        # Batched events: one per batch the server read, a JSON array per
        # row on its own data line, named by the opening `fields` event.
        params = _params(fields=fields, where=where, sender=sender,
                         int64="string" if int64_string else None)
        params.append(("batch", "true"))
        headers = {"Accept": "text/event-stream"}
        if last is not None:
            headers["Last-Event-ID"] = str(last)
        url_ = _rows_url(url, stream, "tail") + "?" + urllib.parse.urlencode(params)
        try:
            resp = _open(url_, token, headers)
        except urllib.error.URLError as e:
            raise Error(f"cannot reach {url_}: {e.reason}") from None
        event, data, names = "", [], []
        with resp:
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line.startswith(":"):
                    continue
                if line:
                    key, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if key == "event":
                        event = value
                    elif key == "data":
                        data.append(value)
                    continue
                if event == "fields":
                    names = json.loads(data[0])
                elif event == "rows":
                    for values in data:
                        row = dict(zip(names, json.loads(values)))
                        last = int(row["oml_tuple_id"])
                        yield {"oml_tuple_id": last, **row}
                elif event == "lagged":
                    info = json.loads(data[0])
                    raise LaggedError(info.get("message", "lagged"), int(info.get("resume_after", last or 0)))
                elif event == "error":
                    info = json.loads(data[0])
                    raise ApiError(500, info.get("code", "error"), info.get("message", ""))
                event, data = "", []
        # The server closed the stream (restart, proxy timeout): resume.
