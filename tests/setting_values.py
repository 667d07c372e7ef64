"""A value for each kind of setting, for the tests of the settings and of the form that edits them."""

from __future__ import annotations

from typing import Any


def other_value(s: Any) -> Any:
    """A value for setting ``s`` other than its default."""
    if s.choices:
        return next(c for c in s.choices if c != s.default)
    if s.kind is bool:
        return not s.default
    return s.default + 1 if s.kind is int else s.default + 0.125
