"""JSON text byte for byte as `json.dumps(value, indent=2, default=str)` writes it, made by the
C encoder.

The standard library encodes with `indent` in pure Python, a generator step per value: a
`check` over many refs spent more time there than judging. Here each container whose items
are all plain (a string, number, boolean, null, or an empty list or object) is one call of the
C encoder, its item separator carrying the line break and the indent of its depth; only the
containers that hold other containers are walked in Python. A key that is not a string (which
the standard encoder turns into one) sends its object through the standard encoder, so every
value comes out exactly as before.

`Encoded` is a value made once and written wherever it stands again (`check`'s outcomes on
refs whose tree was judged already: the same list, said once); `Items`, several items of a
list written as one text.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any

_PLAIN = (str, int, float, bool, type(None))
_string = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
_PAD = "  "


class Encoded:
    """A value encoded once; written at any depth from its text at the top level."""

    __slots__ = ("_at",)

    def __init__(self, value: Any) -> None:
        self._at = {0: indented(value)}

    def at(self, level: int) -> str:
        if level not in self._at:
            self._at[level] = self._at[0].replace("\n", "\n" + _PAD * level)
        return self._at[level]


class Items:
    """Consecutive items of a list that `emit_json` writes item by item (report/render.py),
    as one text: the items at that list's depth (ITEM_LEVEL) with the separators between
    them. `check`'s outcomes, a small object for every patch on every ref, are thus one join
    per ref, not a piece of text and a write for each."""

    __slots__ = ("text",)

    def __init__(self, texts: list[str]) -> None:
        """TEXTS: each item's text at ITEM_LEVEL (`indented(item, ITEM_LEVEL)`); at least one."""
        self.text = ITEM_SEPARATOR.join(texts)


ITEM_LEVEL = 2  # emit_json's lists stand at the document's second level
ITEM_SEPARATOR = ",\n" + _PAD * ITEM_LEVEL

_encoders: dict[int, Callable[[Any], str]] = {}


def _flat_encoder(level: int) -> Callable[[Any], str]:
    """The encoder of a container whose items stand at LEVEL + 1 and hold no containers: the
    C encoder's maker called once per depth where the interpreter has it (what
    `JSONEncoder.encode` calls on every use), the same encoder through `encode` elsewhere."""
    if level not in _encoders:
        separators = (",\n" + _PAD * (level + 1), ": ")
        make = getattr(json.encoder, "c_make_encoder", None)
        if make is None:
            _encoders[level] = json.JSONEncoder(separators=separators, default=str).encode
        else:
            one = make({}, str, _string, None, separators[1], separators[0], False, False, True)
            _encoders[level] = lambda value: "".join(one(value, 0))
    return _encoders[level]


_PLAIN_TYPES = frozenset(_PLAIN)


def _flat(items: Any) -> bool:
    """Whether ITEMS hold no container but an empty one (JSON has nothing to indent there)."""
    others = [item for item in items if not isinstance(item, _PLAIN)]
    return not any(others) and all(isinstance(item, (list, tuple, dict)) for item in others)


def indented(value: Any, level: int = 0) -> str:
    """VALUE as `json.dumps(value, indent=2, default=str)` writes it, its lines after the
    first starting with LEVEL indents (the text of a value nested LEVEL deep)."""
    kind = type(value)
    if kind is str:
        return _string(value)  # the C function the standard encoder calls for a string
    if value is None or kind is bool:
        return "null" if value is None else "true" if value else "false"
    if kind is int:
        return int.__repr__(value)  # what the standard encoder writes (a float may be NaN)
    if isinstance(value, Encoded):
        return value.at(level)
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not set(map(type, value)) <= {str}:
            return json.dumps(value, indent=2, default=str).replace("\n", "\n" + _PAD * level)
        items = value.values()
    elif isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items = value
    else:
        return json.dumps(value, default=str)
    inner, outer = "\n" + _PAD * (level + 1), "\n" + _PAD * level
    if set(map(type, items)) <= _PLAIN_TYPES or _flat(items):
        text = _flat_encoder(level)(value)
        return text[0] + inner + text[1:-1] + outer + text[-1]
    if isinstance(value, dict):
        parts = [f"{_string(key)}: {indented(item, level + 1)}" for key, item in value.items()]
        return "{" + inner + ("," + inner).join(parts) + outer + "}"
    parts = [indented(item, level + 1) for item in value]
    return "[" + inner + ("," + inner).join(parts) + outer + "]"
