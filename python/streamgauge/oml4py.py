"""A drop-in replacement for the ``oml4py`` package (PyPI, 2.10.x).

Change ``import oml4py`` (or ``from oml4py import OMLBase``) to
``from streamgauge import oml4py`` (or ``from streamgauge.oml4py import
OMLBase``) and the script runs unchanged, on the native client, with
every ``--oml-*`` option of the C library (``--oml-config`` for filters
and several destinations, ``--oml-binary``…).

The tables it fills are those oml4py fills: text encoding (exact doubles),
sequence numbers from 0, stream numbers 1, 2, … in ``addmp`` order (no
``_client_instrumentation`` or ``_client_clock`` stream unless
``--oml-instr-interval``/``--oml-clock-interval`` ask for them), and each
value stored as the server reads ``str(value)``, which is what oml4py
sends: ``"false"``, ``"False"``, ``"0"`` and ``""`` are false booleans
and ``"yes"`` a true one; a blob is the base64 text it is given (or raw
``bytes``); a value the server would refuse (``"3.5"`` for an integer)
loses its row, reported on standard error, as the server would drop it.

Argument handling follows oml4py: the constructor's ``domain``, ``sender``
and ``uri`` win over ``--oml-domain``, ``--oml-id``, ``--oml-collect``
(consumed from ``sys.argv``), which win over ``OML_DOMAIN`` (then the
deprecated ``OML_EXP_ID``), ``OML_NAME`` and ``OML_COLLECT`` (then
``OML_SERVER``); the URI defaults to ``tcp:localhost:3003``. As in oml4py,
problems are reported on standard error and disable measurement (tuples are
then printed to standard output) instead of raising.
"""

from __future__ import annotations

import os
import re
import sys
import time

from .client import Client
from .errors import Error

__version__ = "2.10.4"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

def _as_int(v):
    """An integer as the server reads ``str(v)``: decimal digits, optional
    sign (``True`` is sent as ``True`` and refused, as with oml4py)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    s = str(v)
    if not re.fullmatch(r"[+-]?[0-9]+", s):
        raise ValueError(f"{s!r} is not an integer")
    return int(s)


def _as_float(v):
    if isinstance(v, float):
        return v
    return float(str(v))


def _as_bool(v):
    """liboml2's reading of ``str(v)``: false when it is a case-insensitive
    prefix of ``false`` (the empty string too) or ``0``, else true."""
    s = str(v)
    return not (s == "0" or "false".startswith(s.lower()))


def _as_blob(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    import base64
    import binascii

    try:
        return base64.b64decode(str(v), validate=True)
    except binascii.Error as e:
        raise ValueError(f"{str(v)!r} is not base64 ({e})") from None


_CONVERT = {
    "int32": _as_int, "uint32": _as_int, "int64": _as_int, "uint64": _as_int, "integer": _as_int,
    "long": _as_int, "guid": _as_int, "double": _as_float, "real": _as_float, "float": _as_float,
    "string": str, "bool": _as_bool, "blob": _as_blob,
}


def _err(level: str, msg: str) -> None:
    sys.stderr.write(f"{level}\t{msg}\n")


def _take_oml_args(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Removes every ``--oml-*`` option from ``argv[1:]``. Returns the values
    of --oml-id/--oml-domain/--oml-collect and the other ``--oml-*``
    options (for the native client), leaving ``argv`` without them."""
    known = {"--oml-id": "id", "--oml-domain": "domain", "--oml-collect": "collect"}
    flags = {"--oml-noop", "--oml-help", "--oml-text", "--oml-binary", "--oml-list-filters"}
    found: dict[str, str] = {}
    other: list[str] = []
    rest = [argv[0]] if argv else []
    i = 1
    while i < len(argv):
        a = argv[i]
        name, eq, val = a.partition("=")
        if not a.startswith("--oml-"):
            rest.append(a)
        elif name in known:
            if not eq and i + 1 < len(argv):
                i += 1
                val = argv[i]
            found[known[name]] = val
        elif eq or name in flags or i + 1 >= len(argv):
            other.append(a)
        else:
            other += [a, argv[i + 1]]
            i += 1
        i += 1
    argv[:] = rest
    return found, other


def _tcp_uri(uri: str) -> str | None:
    """oml4py's URI forms (host, tcp:host, host:port, tcp:host:port) as
    ``tcp://host:port``; other URIs (``file:...``, ``tcp://...``) unchanged."""
    if "://" in uri or uri.startswith(("file:", "flush")):
        return uri
    parts = uri.split(":")
    if len(parts) == 1:
        host, port = parts[0], "3003"
    elif len(parts) == 2:
        host, port = (parts[1], "3003") if parts[0] == "tcp" else (parts[0], parts[1])
    elif len(parts) == 3:
        host, port = parts[1], parts[2]
    else:
        return None
    if not port.isdigit():
        _err("ERROR", f"Cannot use '{port}' as a port number")
        return None
    return f"tcp://{host}:{port}"


class OMLBase:
    """OML4Py's client class, on the streamgauge native client."""

    VERSION = __version__
    VERSION_STRING = f"OML4Py Client {__version__} (streamgauge)"
    COPYRIGHT = "streamgauge OML4Py compatibility layer"
    PROTOCOL = 5
    DEFAULT_HOST = "localhost"
    DEFAULT_PORT = 3003
    args = None

    def __init__(self, appname, domain=None, sender=None, uri=None, expid=None):
        sys.stderr.write(f"INFO\t{self.VERSION_STRING} [Protocol V{self.PROTOCOL}]\n")
        self.oml = True
        self.appname = appname
        self.starttime = 0
        self._client: Client | None = None
        self._mps: dict[str, tuple] = {}
        self._pending_meta: list[tuple] = []
        found, other = _take_oml_args(sys.argv)
        if type(self).args is None:
            type(self).args = found
        if not _NAME.match(appname or ""):
            _err("ERROR", f"Invalid app name: {appname}")
            self._disable_oml()
        if expid is not None:
            _err("WARN", f"{type(self).__name__} parameter 'expid' is deprecated; please use 'domain' instead")
        if domain is None:
            domain = expid
        env = os.environ
        if domain is None:
            domain = found.get("domain") or env.get("OML_DOMAIN")
            if domain is None and "OML_EXP_ID" in env:
                domain = env["OML_EXP_ID"]
                _err("WARN", "OML_EXP_ID is deprecated; please use OML_DOMAIN instead")
        if domain is None:
            _err("ERROR", "No experimental domain specified")
            self._disable_oml()
        if uri is None:
            uri = found.get("collect") or env.get("OML_COLLECT")
            if uri is None and "OML_SERVER" in env:
                uri = env["OML_SERVER"]
                _err("WARN", "OML_SERVER is deprecated; please use OML_COLLECT instead")
            if uri is None:
                uri = f"tcp:{self.DEFAULT_HOST}:{self.DEFAULT_PORT}"
        collect = _tcp_uri(str(uri))
        if collect is None:
            self._disable_oml()
        if sender is None:
            sender = found.get("id") or env.get("OML_NAME")
        if sender is None:
            _err("ERROR", "No sender ID specified (OML_NAME)")
            self._disable_oml()
        self.domain, self.sender, self.uri = domain, sender, collect
        if self.oml:
            try:
                self._client = Client(
                    appname, domain=domain, sender=sender,
                    collect=None if _has_config(other) else collect,
                    argv=[appname] + _oml4py_defaults(other) + other,
                    first_seq=0,
                )
            except Error as e:
                _err("ERROR", str(e))
                self._disable_oml()

    def addmp(self, mpname, schema):
        if mpname is None or not _NAME.match(mpname):
            _err("ERROR", f"Invalid measurement point name: {mpname}")
            self._disable_oml()
            return
        if mpname in self._mps:
            _err("ERROR", f"Attempted to add an existing MP '{mpname}'")
            return
        fields = []
        for part in str(schema).split():
            name, _, ty = part.partition(":")
            fields.append((name, ty))
        convs = [_CONVERT.get(ty, str) for _, ty in fields]
        mp = None
        if self._client is not None:
            try:
                mp = self._client.mp(mpname, fields)
            except Error as e:
                _err("ERROR", f"Cannot add MP '{mpname}': {e}")
                return
        self._mps[mpname] = (mp, convs, {n for n, _ in fields})

    def start(self):
        if not self.oml:
            _err("WARN", "OML disabled")
            return
        if self.starttime:
            _err("ERROR", "start() called unexpectedly")
            return
        try:
            self._client.start()
        except Error as e:
            _err("ERROR", f"Could not start: {e}")
            self._disable_oml()
            return
        self.starttime = self._client.start_time or int(time.time())
        _err("INFO", f"Collection URI is {self.uri}")

    def inject(self, mpname, values):
        if self.oml and self.starttime == 0:
            _err("ERROR", "Did not call start()")
            self._disable_oml()
        entry = self._mps.get(mpname)
        if entry is None:
            _err("ERROR", f"Tried to inject into unknown MP '{mpname}'")
            return
        mp, convs, _ = entry
        try:
            values = list(values)
            typed = tuple(c(v) for c, v in zip(convs, values))
        except TypeError:
            _err("ERROR", "Invalid measurement list")
            return
        except ValueError as e:
            _err("ERROR", f"Sample of MP '{mpname}' not stored: {e} (the server would refuse it)")
            return
        if self.oml and mp is not None:
            try:
                mp.inject(typed)
                return
            except Error as e:
                _err("ERROR", f"Could not inject sample: {e}")
                return
        sys.stdout.write("\t".join([str(time.time() - self.starttime), mpname] + [_escape(str(v)) for v in values]) + "\n")

    def inject_metadata(self, mpname, key, value, fname=None):
        if self.oml and self.starttime == 0:
            _err("ERROR", "Did not call start()")
            return
        if key is None or value is None:
            _err("ERROR", "Missing key or value")
            return
        if not _NAME.match(str(key)):
            _err("ERROR", f"'{key}' is not a valid metadata key name")
            return
        if mpname is not None and mpname not in self._mps:
            _err("ERROR", f"Tried to inject metadata into unknown MP '{mpname}'")
            return
        if fname and mpname and fname not in self._mps[mpname][2]:
            _err("WARN", f"Field '{fname}' not found in MP '{mpname}', not reporting")
            return
        if not (self.oml and self._client is not None):
            sys.stdout.write(f"{key}\t{_escape(str(value))}\n")
            return
        try:
            if mpname is None:
                self._client.metadata(str(key), str(value))
            else:
                self._mps[mpname][0].inject_metadata(str(key), str(value), fname or None)
        except Error as e:
            _err("ERROR", f"Could not inject metadata: {e}")

    def close(self):
        if self._client is not None:
            self._client.close()
        self.starttime = 0

    def generate_guid(self):
        import random

        rng = random.SystemRandom()
        guid = 0
        while guid == 0:
            guid = rng.getrandbits(64)
        return guid

    def _disable_oml(self):
        if not self.oml:
            return
        _err("WARN", "Disabling OML output")
        self.oml = False


def _oml4py_defaults(opts: list[str]) -> list[str]:
    """Options that make the native client send what oml4py sends, unless
    the user chose otherwise (their options come later and win)."""
    given = {o.partition("=")[0] for o in opts}
    out = []
    if not given & {"--oml-binary", "--oml-text", "--oml-config"}:
        out.append("--oml-text")
    if "--oml-instr-interval" not in given:
        out += ["--oml-instr-interval", "0"]
    if "--oml-clock-interval" not in given:
        out += ["--oml-clock-interval", "0"]
    return out


def _has_config(opts: list[str]) -> bool:
    return any(o == "--oml-config" or o.startswith("--oml-config=") for o in opts)


def _escape(s: str) -> str:
    return s.replace("\\", r"\\").replace("\t", r"\t").replace("\r", r"\r").replace("\n", r"\n")


__all__ = ["OMLBase"]
