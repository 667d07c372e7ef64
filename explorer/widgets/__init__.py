"""Widgets of the window's panels."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QObject

Q = TypeVar("Q", bound=QObject)


def named(obj: Q, name: str) -> Q:
    """``obj`` with its object name set (what tests and style sheets find it by). Qt's own
    ``QWidget(objectName=...)`` keyword works too, but PySide6's type stubs do not declare it."""
    obj.setObjectName(name)
    return obj
