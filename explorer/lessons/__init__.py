"""Lessons: plain files of slides that set the scene and say a short text, optionally asking a question first
(:mod:`explorer.lessons.lesson`); run in the window and in presenter mode by :mod:`explorer.lessons.runner`;
three bundled lessons in ``explorer/lessons/bundled/``. ``python -m explorer.lessons --check FILE…`` checks files."""

from pathlib import Path

BUNDLED = Path(__file__).parent / "bundled"


def bundled_lessons() -> list[Path]:
    """The lessons shipped with the program, in their order."""
    return sorted(BUNDLED.glob("*.toml"))
