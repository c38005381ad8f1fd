"""Reading an experiment's results into pandas.

The storage layout is the OML one (docs/storage.md): one table per stream
with ``oml_sender_id, oml_seq, oml_ts_client, oml_ts_server`` and one column
per field; ``_senders``; ``_experiment_metadata`` with the ``start_time``
and ``table_<name>`` bookkeeping rows and the clients' metadata.
"""

from __future__ import annotations

import os
import sqlite3

_UNSIGNED = {"uint64", "guid"}


class _Db:
    """A DB-API connection plus the one SQL difference that matters here."""

    def __init__(self, source):
        s = str(source)
        self.pg = s.startswith(("postgres://", "postgresql://")) or (
            "dbname=" in s and not os.path.exists(s)
        )
        if self.pg:
            try:
                import psycopg  # type: ignore

                self.conn = psycopg.connect(s)
            except ImportError:  # pragma: no cover - optional
                try:
                    import psycopg2  # type: ignore
                except ImportError as e:
                    raise ImportError("reading PostgreSQL needs psycopg (pip install psycopg)") from e
                self.conn = psycopg2.connect(s)
        else:
            if not os.path.exists(s):
                raise FileNotFoundError(s)
            self.conn = sqlite3.connect(f"file:{s}?mode=ro", uri=True)

    def query(self, sql, params=()):
        if self.pg:
            sql = sql.replace("?", "%s")
        cur = self.conn.cursor()
        cur.execute(sql, params)
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()

    def tables(self) -> list[str]:
        if self.pg:
            _, rows = self.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
            )
        else:
            _, rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [r[0] for r in rows]

    def close(self):
        self.conn.close()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _bookkeeping(db: _Db):
    """(start_time, {table: {field: type}}, metadata rows)."""
    cols, rows = db.query('SELECT * FROM "_experiment_metadata"')
    ix = {c: i for i, c in enumerate(cols)}
    start, schemas, meta = None, {}, []
    for r in rows:
        key, value = r[ix["key"]], r[ix["value"]]
        bookkeeping = "oml_sender_id" in ix and r[ix["oml_sender_id"]] is None
        if bookkeeping and key == "start_time":
            start = float(value)
        elif bookkeeping and key and key.startswith("table_"):
            parts = str(value).split()
            # "<index> <name> f:t f:t ..."
            fields = dict(p.split(":", 1) for p in parts[2:] if ":" in p)
            schemas[key[len("table_"):]] = fields
        elif not bookkeeping:
            meta.append({c: r[i] for c, i in ix.items()})
    return start, schemas, meta


def _decode_unsigned(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return int.from_bytes(bytes(v), "big")
    return v


def _frame(db: _Db, table: str, start, schemas, meta, senders, raw_timestamps: bool):
    import pandas as pd

    cols, rows = db.query(f"SELECT * FROM {_quote(table)}")
    df = pd.DataFrame.from_records(rows, columns=cols)
    types = schemas.get(table, {})
    for col, ty in types.items():
        if ty in _UNSIGNED and col in df.columns and len(df):
            vals = [_decode_unsigned(v) for v in df[col]]
            df[col] = pd.array(vals, dtype="UInt64")
    if "oml_sender_id" in df.columns and senders:
        df.insert(df.columns.get_loc("oml_sender_id") + 1, "oml_sender", df["oml_sender_id"].map(senders))
    if not raw_timestamps and start is not None:
        for col in ("oml_ts_client", "oml_ts_server"):
            if col in df.columns:
                df[col] = pd.to_datetime(start + df[col].astype("float64"), unit="s", utc=True)
    df.attrs["table"] = table
    df.attrs["start_time"] = start
    df.attrs["schema"] = types
    prefix = "." + table
    df.attrs["metadata"] = [
        m for m in meta if m.get("subject") == prefix or str(m.get("subject", "")).startswith(prefix + ".")
    ]
    return df


def read(source, table: str | None = None, *, raw_timestamps: bool = False, metadata: bool = False):
    """Results as pandas DataFrames.

    ``source`` is an SQLite file (``<domain>.sq3``) or a PostgreSQL
    connection string (``postgresql://…`` or ``dbname=…``; needs
    ``psycopg``). With ``table``, returns that table's DataFrame; without,
    a dict of every stream table (names not starting with ``_``), plus
    ``_experiment_metadata`` and ``_senders`` when ``metadata=True``.

    ``oml_ts_client`` and ``oml_ts_server`` become UTC timestamps (the
    experiment's ``start_time`` plus the offset) unless ``raw_timestamps``;
    an ``oml_sender`` column gives the sender name; uint64 and guid columns
    have pandas' ``UInt64`` dtype, values above 2^63−1 (stored as 8-byte
    big-endian BLOBs) decoded.
    Each frame's ``attrs`` hold ``start_time``, ``schema`` (field → OML
    type) and ``metadata`` (the stream's and its fields' metadata rows).
    """
    import pandas as pd

    db = _Db(source)
    try:
        names = db.tables()
        start, schemas, meta = (None, {}, [])
        if "_experiment_metadata" in names:
            start, schemas, meta = _bookkeeping(db)
        senders = {}
        if "_senders" in names:
            _, rows = db.query('SELECT id, name FROM "_senders"')
            senders = {i: n for i, n in rows}
        if table is not None:
            if table not in names:
                raise KeyError(f"no table {table!r} in {source}; tables: {', '.join(names)}")
            if table.startswith("_"):
                cols, rows = db.query(f"SELECT * FROM {_quote(table)}")
                return pd.DataFrame.from_records(rows, columns=cols)
            return _frame(db, table, start, schemas, meta, senders, raw_timestamps)
        out = {}
        for t in names:
            if t.startswith("_"):
                if metadata and t in ("_experiment_metadata", "_senders"):
                    cols, rows = db.query(f"SELECT * FROM {_quote(t)}")
                    out[t] = pd.DataFrame.from_records(rows, columns=cols)
                continue
            out[t] = _frame(db, t, start, schemas, meta, senders, raw_timestamps)
        return out
    finally:
        db.close()
