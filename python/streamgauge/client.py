"""The Pythonic client: schemas from dicts, strings or dataclasses; a
context-managed lifecycle; the C library's ``--oml-*`` options."""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Mapping, Sequence

from . import _native
from .errors import ConfigError
from .errors import TypeError as SgTypeError

#: The native measurement point class (``mp.inject(...)``, ``mp.inject_metadata(...)``).
Mp = _native.Mp

# Python annotations to OML types, for dataclass schemas.
_PY_TYPES = {int: "int64", float: "double", str: "string", bytes: "blob", bool: "bool"}
_VALID = set(_native.type_names()) | {"integer", "long", "real", "float"}


def _oml_type(name: str, ann) -> str:
    """The OML type name of one annotation (a type, or an OML type name as a
    string or in ``typing.Annotated[int, "uint32"]``)."""
    if typing.get_origin(ann) is typing.Annotated:
        for extra in typing.get_args(ann)[1:]:
            if isinstance(extra, str) and extra in _VALID:
                return extra
        ann = typing.get_args(ann)[0]
    if isinstance(ann, str):
        if ann in _VALID:
            return ann
        ann = {"int": int, "float": float, "str": str, "bytes": bytes, "bool": bool}.get(ann, ann)
    if ann in _PY_TYPES:
        return _PY_TYPES[ann]
    if typing.get_origin(ann) in (list, tuple, Sequence):
        (inner,) = typing.get_args(ann)[:1] or (float,)
        return "[" + _PY_TYPES.get(inner, "double") + "]"
    raise SgTypeError(f"field {name!r}: no OML type for annotation {ann!r}")


def schema_of(schema) -> list[tuple[str, str]]:
    """Normalise a schema to ``[(field, oml type), ...]``.

    Accepts a dict ``{"field": "int32"}``, a list of pairs, an OML4Py-style
    string ``"f1:int32 f2:double"``, or a dataclass (class or instance)
    whose annotations are Python types (``int`` → int64, ``float`` → double,
    ``str`` → string, ``bytes`` → blob, ``bool`` → bool, ``list[float]`` →
    [double]) or OML type names (``x: "uint32"``, ``Annotated[int, "int32"]``).
    """
    if isinstance(schema, str):
        out = []
        for part in schema.split():
            name, sep, ty = part.partition(":")
            if not sep:
                raise SgTypeError(f"schema element {part!r} is not name:type")
            out.append((name, ty))
        return out
    if dataclasses.is_dataclass(schema):
        cls = schema if isinstance(schema, type) else type(schema)
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception:  # string annotations naming OML types
            hints = {f.name: f.type for f in dataclasses.fields(cls)}
        return [(f.name, _oml_type(f.name, hints.get(f.name, f.type))) for f in dataclasses.fields(cls)]
    if isinstance(schema, Mapping):
        return [(str(k), str(v)) for k, v in schema.items()]
    return [(str(k), str(v)) for k, v in schema]


class Client:
    """An injection point: measurement points, streams, destinations.

    ``app`` names the application (tables are ``<app>_<mp>``). ``domain``,
    ``sender`` and ``collect`` override the command line, the ``OML_*``
    variables and the configuration file; ``config`` names an XML or TOML
    configuration file (filters, several destinations). ``argv`` (the
    program first; default ``[app]``) is searched for ``--oml-*`` options as
    the C library does; pass ``sys.argv`` to honour the user's. The
    remaining arguments are in :attr:`argv`.

    Use as a context manager, or call :meth:`start` and :meth:`close`.
    """

    def __init__(
        self,
        app: str,
        domain: str | None = None,
        sender: str | None = None,
        collect: str | None = None,
        argv: Sequence[str] | None = None,
        config: str | None = None,
        *,
        encoding: str | None = None,
        ring_bytes: int | None = None,
        backchannel: str | None = None,
        first_seq: int | None = None,
    ):
        args = [app] if not argv else [str(a) for a in argv]
        # Options given here win: appended last, and the last occurrence wins.
        if domain is not None:
            args += ["--oml-domain", domain]
        if sender is not None:
            args += ["--oml-id", sender]
        if collect is not None:
            args += ["--oml-collect", collect]
        if config is not None:
            args += ["--oml-config", str(config)]
        if encoding is not None:
            if encoding not in ("text", "binary"):
                raise ConfigError(f"encoding must be 'text' or 'binary', not {encoding!r}")
            args += ["--oml-" + encoding]
        if backchannel is not None:
            if backchannel not in ("off", "resume", "feedback"):
                raise ConfigError(f"backchannel must be 'off', 'resume' or 'feedback', not {backchannel!r}")
            args += ["--oml-backchannel", backchannel]
        self._native = _native.Client(app, args, ring_bytes, first_seq)
        for w in self._native.warnings:
            print(f"streamgauge: warning: {w}", file=sys.stderr)
        if self._native.help is not None:
            print(self._native.help)
        self.app = app
        self._mps: dict[str, Mp] = {}
        self._started = False

    @property
    def argv(self) -> list[str]:
        """The arguments without the ``--oml-*`` options."""
        return self._native.argv

    @property
    def enabled(self) -> bool:
        """False when measurement is disabled (``--oml-noop``)."""
        return self._native.enabled

    @property
    def domain(self) -> str | None:
        return self._native.domain

    @property
    def sender(self) -> str | None:
        return self._native.sender

    @property
    def start_time(self) -> int | None:
        """The header's ``start-time`` (Unix seconds), once started."""
        return self._native.start_time

    def mp(self, name: str, schema) -> Mp:
        """Defines a measurement point (see :func:`schema_of` for ``schema``);
        before or after :meth:`start`."""
        mp = self._native.add_mp(name, schema_of(schema))
        self._mps[name] = mp
        return mp

    add_mp = mp

    def __getitem__(self, name: str) -> Mp:
        return self._mps[name]

    def start(self) -> "Client":
        self._native.start()
        self._started = True
        return self

    def metadata(self, key: str, value) -> None:
        """Experiment-level metadata (stored in ``_experiment_metadata``)."""
        self._native.inject_metadata(key, str(value))

    inject_metadata = metadata

    def close(self) -> None:
        """Flushes every destination and stops; idempotent."""
        self._native.close()

    def stats(self) -> dict:
        """Counters (exact after close): injected, dropped, per destination."""
        return self._native.stats()

    def __enter__(self) -> "Client":
        if not self._started:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self._native.close()
        except Exception:
            pass
