"""The shared cross-language vectors (spec/vectors) decoded through the
binding: every `NNNN-name.{bin,txt}` must decode to the events and errors
its `NNNN-name.json` lists, as in the Rust suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamgauge import _native

VECTORS = Path(__file__).resolve().parents[2] / "spec" / "vectors"


def cases():
    for case in sorted(VECTORS.glob("[0-9][0-9][0-9][0-9]-*.json")):
        if case.name.endswith((".rows.json", ".rows-text.json")):
            continue
        expected = json.loads(case.read_text())
        for ext in ("bin", "txt"):
            if ext in expected:
                yield pytest.param(case.with_suffix("." + ext), expected[ext], id=f"{case.stem}.{ext}")


@pytest.mark.parametrize("path,expected", list(cases()))
def test_vector(path, expected):
    got = json.loads(_native.decode(path.read_bytes()))
    assert got["events"] == expected["events"]
    assert [(e["offset"], e["code"], e["fatal"], e["events_before"]) for e in got["errors"]] == [
        (e["offset"], e["code"], e["fatal"], e["events_before"]) for e in expected.get("errors", [])
    ]


def test_there_are_vectors():
    assert len(list(cases())) >= 20
