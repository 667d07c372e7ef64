"""The settings dataclasses as plain data: what each field means, and one to_dict / from_dict policy.

Field metadata. A field a person sets (on the command line, in the window's settings form) carries a
:class:`Setting` in its ``dataclasses.field`` metadata, written once next to the field: its label, a
one-line help, the command-line flag, and the form's range. The command line (``model/cli/train.py``) and the
settings form (``explorer/panels/settings_form.py``) are generated from :func:`settings_of`. Labels are
English; the window translates them where it shows them (``explorer.i18n.tr``). Choices are never written
here: a field with a fixed set of values is typed ``Literal[...]`` and its choices are the Literal's, less
those its Setting hides (values set in code only, such as an experiment's ``positional="none"``).

Plain data. :func:`to_plain` gives a dict of the fields; :func:`from_plain` builds the class back, refusing
keys that are not fields (naming them and the class), and filling missing keys with the defaults.
A key that an older file may still carry after its field was renamed or removed goes in the class's
``retired`` table (old key → new field name, or None to drop it). None are needed today: every checkpoint
this program has written carries present fields of ModelConfig, TrainConfig, DataSpec and TokenizerSpec
(checked over the whole history of those classes); those added since (ModelConfig's ``residual``,
``scaled_attention``, ``causal``) take their defaults, the values every older model had.

Kept free of PyTorch and Qt: the window imports it before the engine is loaded.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SETTING = "setting"  # the key of a Setting in a dataclass field's metadata
SettingValue = int | float | str | bool  # what a setting holds


class ConfigError(ValueError):
    """Settings that cannot work, with each problem on its own (the window lists them without the
    heading, e.g. "Invalid model configuration")."""

    def __init__(self, heading: str, problems: list[str]) -> None:
        super().__init__(f"{heading}: " + "; ".join(problems))
        self.problems = list(problems)


T = TypeVar("T", bound="DataclassInstance")


@dataclass(frozen=True)
class Setting:
    """What a person sees of one settings field."""

    label: str  # English, as the settings form shows it (translated there)
    help: str  # one line, as the command line's --help shows it
    flag: str = ""  # command-line flag without "--"; empty: the field's name with "-" for "_"
    form: bool = False  # also a row of the window's settings form
    low: float = 0  # the form's range (numbers)
    high: float = 0
    step: float = 1  # the form's spin-box step
    decimals: int = 0  # the form's decimals (float fields)
    hidden: tuple[str, ...] = ()  # values of the Literal that neither the form nor the command line offers


def setting(default: Any, label: str, help: str, **options: Any) -> Any:
    """A dataclass field with ``default`` that a person sets; ``options`` are :class:`Setting`'s."""
    return dataclasses.field(default=default, metadata={SETTING: Setting(label, help, **options)})


@dataclass(frozen=True)
class SettingField:
    """A field of a settings class with its Setting, its kind of value and its choices resolved."""

    name: str
    kind: type  # int, float, bool or str
    choices: tuple[str, ...]  # a Literal field's values offered to a person (its Setting's hidden ones left out)
    default: Any
    setting: Setting

    @property
    def flag(self) -> str:
        """The command-line flag, without "--"."""
        return self.setting.flag or self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """Where argparse stores the flag's value."""
        return self.flag.replace("-", "_")


@functools.cache
def settings_of(cls: type) -> tuple[SettingField, ...]:
    """The fields of the dataclass ``cls`` that carry a Setting, in field order."""
    hints = _hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if SETTING not in f.metadata:
            continue
        choices = literal_choices(hints[f.name])
        kind = str if choices else hints[f.name]
        if kind not in (int, float, bool, str):
            raise TypeError(f"{cls.__name__}.{f.name}: a setting is an int, float, bool, str or Literal")
        shown = tuple(c for c in choices if c not in f.metadata[SETTING].hidden)
        out.append(SettingField(f.name, kind, shown, f.default, f.metadata[SETTING]))
    return tuple(out)


def form_settings(cls: type) -> tuple[SettingField, ...]:
    """The settings of ``cls`` that are rows of the window's settings form, in field order."""
    return tuple(s for s in settings_of(cls) if s.setting.form)


def literal_choices(annotation: Any) -> tuple[str, ...]:
    """The values of ``Literal["a", "b"]``; () for any other annotation."""
    return typing.get_args(annotation) if typing.get_origin(annotation) is Literal else ()


def choice_problems(obj: Any) -> list[str]:
    """A message for each Literal field of the dataclass ``obj`` whose value is not one of its choices."""
    hints = _hints(type(obj))  # type: ignore[arg-type]  # a dataclass type is hashable; typeshed's cache says Hashable
    problems = []
    for f in dataclasses.fields(obj):
        choices, value = literal_choices(hints[f.name]), getattr(obj, f.name)
        if choices and value not in choices:
            problems.append(f"{f.name} must be one of {choices} (got {value!r})")
    return problems


def to_plain(obj: Any) -> dict[str, Any]:
    """The fields of the dataclass ``obj`` as a dict (JSON-ready when the fields are)."""
    return dataclasses.asdict(obj)


def from_plain(
    cls: type[T],
    data: Any,
    what: str,
    error: type[Exception] = ValueError,
    retired: Mapping[str, str | None] | None = None,
) -> T:
    """Build the dataclass ``cls`` from the dict ``data`` (e.g. read from a checkpoint).

    Keys that are not fields raise ``error`` naming them and ``cls`` (``what`` says what ``cls`` is, e.g.
    "model configuration"); missing keys take the field's default. ``retired`` maps keys that older files
    carry to the field they became (None: no longer used, dropped).
    """
    if not isinstance(data, Mapping):
        raise error(f"a {what} ({cls.__name__}) must be a table of named values, not {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if retired and key in retired:
            renamed = retired[key]
            if renamed is None or renamed in data:  # dropped; or the file carries the new key too, which wins
                continue
            key = renamed
        values[key] = value
    unknown = sorted((k for k in values if k not in fields), key=str)
    if unknown:
        raise error(f"Unknown {what} keys for {cls.__name__}: {', '.join(map(repr, unknown))}")
    missing = [name for name, f in fields.items() if name not in values and _required(f)]
    if missing:
        raise error(f"a {what} ({cls.__name__}) needs {', '.join(missing)}")
    return cls(**values)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
