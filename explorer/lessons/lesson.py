"""A lesson: a plain file (TOML or JSON) of slides a teacher steps through with a clicker, or a student alone.

Each slide sets the scene — which model (the bundled one, a checkpoint or folder beside the lesson file, or a
bundled experiment's variant), the sentence, the view, the decoding mode, the attention layer and head, how many
decoding steps to show — and shows a short text in English and Chinese. A slide may first ask a question with
choices; the next click reveals the answer (and why), the one after goes on.

    title = "Attention and the encoder–decoder"
    title_zh = "注意力与编码器–解码器"

    [[slides]]
    text = "Each output word looks back at the source..."
    text_zh = "每个输出的词都回头看原文……"
    [slides.scene]
    view = "attention"          # decoding, tree, attention, positional, training, explainer, why
    sentence = "I read a book yesterday."
    steps = 3                   # decoding steps shown
    attention_kind = "cross"    # encoder, decoder_self, cross
    layer = 2
    head = 1
    [slides.question]
    ask = "Which source word will the next word look at?"
    ask_zh = "下一个词会看原文中的哪个词？"
    choices = ["I", "book", "yesterday"]
    choices_zh = ["我", "书", "昨天"]
    answer = 1                  # 0-based
    why = "…"
    why_zh = "…"

This module reads, checks and writes lessons; it needs no window (``python -m explorer.lessons --check``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import tomllib

from explorer.presenter import VIEW_KEYS, Scene

MODELS = ("bundled",)  # besides a path beside the lesson file, or "experiment:<name>[/baseline]"
KINDS = ("encoder", "decoder_self", "cross")
MODES = ("greedy", "beam", "sample")


class LessonError(ValueError):
    """A lesson that cannot be used; ``problems`` says each thing to put right."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        super().__init__(f"{path}: " + "; ".join(problems))
        self.path, self.problems = path, problems


@dataclass(frozen=True)
class Question:
    ask: str
    ask_zh: str
    choices: tuple[str, ...]
    choices_zh: tuple[str, ...]
    answer: int  # 0-based index into choices
    why: str = ""
    why_zh: str = ""


@dataclass(frozen=True)
class Slide:
    text: str
    text_zh: str
    scene: Scene
    model: str = ""  # "" keeps the model of the slide before; "bundled", a path, or "experiment:<name>"
    steps: int = 0  # decoding steps shown once the sentence is started
    question: Question | None = None

    def said(self, language: str) -> str:
        return self.text_zh if language == "zh" and self.text_zh else self.text


@dataclass(frozen=True)
class Lesson:
    title: str
    title_zh: str
    slides: tuple[Slide, ...]
    path: Path | None = None

    def title_in(self, language: str) -> str:
        return self.title_zh if language == "zh" and self.title_zh else self.title


def read_lesson(path: str | Path) -> Lesson:
    """The lesson in ``path`` (``.toml`` or ``.json``); a :class:`LessonError` lists what is wrong with it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LessonError(path, [f"cannot be read ({exc.strerror or exc})"]) from exc
    try:
        plain = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        form = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise LessonError(path, [f"is not valid {form}: {exc}"]) from exc
    problems: list[str] = []
    slides = []
    raw = plain.get("slides") if isinstance(plain, dict) else None
    if not isinstance(raw, list) or not raw:
        raise LessonError(path, ["has no slides (a list [[slides]])"])
    for n, item in enumerate(raw, 1):
        slide = _slide(item, f"slide {n}", problems)
        if slide is not None:
            slides.append(slide)
    title = plain.get("title")
    if not isinstance(title, str) or not title.strip():
        problems.append("has no title")
    if problems:
        raise LessonError(path, problems)
    return Lesson(str(title), str(plain.get("title_zh", "")), tuple(slides), path)


def _slide(item: Any, where: str, problems: list[str]) -> Slide | None:
    if not isinstance(item, dict):
        problems.append(f"{where} is not a table of keys")
        return None
    scene_plain = {"name": where, "view": "decoding", **(item.get("scene") or {})}
    steps = scene_plain.pop("steps", 0)
    names = {f.name for f in fields(Scene)}
    unknown = sorted(set(scene_plain) - names)
    if unknown:
        problems.append(f"{where}: unknown scene keys {', '.join(unknown)}")
    scene = Scene.from_plain({k: v for k, v in scene_plain.items() if k in names})
    if scene is None:
        problems.append(f"{where}: the view must be one of {', '.join(VIEW_KEYS)}")
        return None
    question = _question(item.get("question"), where, problems)
    text, text_zh = item.get("text", ""), item.get("text_zh", "")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}: no text")
    if not isinstance(text_zh, str) or not text_zh.strip():
        problems.append(f"{where}: no Chinese text (text_zh)")
    if not isinstance(steps, int) or steps < 0:
        problems.append(f"{where}: steps must be a whole number ≥ 0")
        steps = 0
    return Slide(str(text), str(text_zh), scene, str(item.get("model", "")), steps, question)


def _question(plain: Any, where: str, problems: list[str]) -> Question | None:
    if plain is None:
        return None
    if not isinstance(plain, dict):
        problems.append(f"{where}: the question is not a table of keys")
        return None
    choices, choices_zh = plain.get("choices", []), plain.get("choices_zh", [])
    answer = plain.get("answer")
    if not isinstance(choices, list) or len(choices) < 2:
        problems.append(f"{where}: a question needs at least two choices")
        return None
    if not isinstance(choices_zh, list) or len(choices_zh) != len(choices):
        problems.append(f"{where}: choices_zh must translate each of the {len(choices)} choices")
    if not isinstance(answer, int) or not 0 <= answer < len(choices):
        problems.append(f"{where}: the answer must be the index (from 0) of one of the {len(choices)} choices")
        answer = 0
    if not plain.get("ask") or not plain.get("ask_zh"):
        problems.append(f"{where}: the question needs ask and ask_zh")
    zh = [str(c) for c in choices_zh] if isinstance(choices_zh, list) else []
    return Question(
        str(plain.get("ask", "")),
        str(plain.get("ask_zh", "")),
        tuple(str(c) for c in choices),
        tuple(zh),
        answer,
        str(plain.get("why", "")),
        str(plain.get("why_zh", "")),
    )


# -- checking what a lesson refers to ---------------------------------------------------------------------------------
def check_lesson(path: str | Path) -> list[str]:
    """Every problem of the lesson in ``path``: its form, and each slide's model, sentence and head (the models are
    opened to check the layer and head exist). Empty when the lesson can be run from first slide to last."""
    try:
        lesson = read_lesson(path)
    except LessonError as exc:
        return exc.problems
    problems: list[str] = []
    model = ""
    for n, slide in enumerate(lesson.slides, 1):
        model = slide.model or model
        where = f"slide {n}"
        if not model:
            problems.append(f'{where}: no model yet (say model = "bundled" on the first slide)')
            continue
        sizes = _model_sizes(model, Path(path).parent, where, problems)
        if slide.scene.view != "training" and not slide.scene.sentence and slide.steps:
            problems.append(f"{where}: steps without a sentence")
        if sizes is not None and slide.scene.view in ("attention", "explainer"):
            layers, heads = sizes.get(slide.scene.attention_kind, 0), sizes["heads"]
            if slide.scene.attention_kind not in KINDS or layers == 0:
                problems.append(f"{where}: this model has no {slide.scene.attention_kind} attention")
            elif not (1 <= slide.scene.layer <= layers and 1 <= slide.scene.head <= heads):
                problems.append(
                    f"{where}: layer {slide.scene.layer}, head {slide.scene.head} (the model has {layers} layers of "
                    f"{heads} heads)"
                )
        if slide.scene.mode not in MODES:
            problems.append(f"{where}: mode must be one of {', '.join(MODES)}")
    return problems


_SIZES: dict[str, dict[str, int] | None] = {}


def _model_sizes(model: str, here: Path, where: str, problems: list[str]) -> dict[str, int] | None:
    """Layers per attention kind and heads of the model a slide names (opened once per check)."""
    try:
        found = resolve_model(model, here)
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None
    if isinstance(found, tuple):  # an experiment: its settings, not a file
        from model.experiments import variant_named

        variant_named(found[0])
        return None
    key = str(found)
    if key not in _SIZES:
        from model.session import Session

        try:
            cfg = Session.load(found, device="cpu").model_cfg
        except Exception as exc:  # noqa: BLE001 — any reason a model cannot be opened is a problem of the lesson
            problems.append(f"{where}: the model {model} cannot be opened ({exc})")
            _SIZES[key] = None
            return None
        family = cfg.family

        def layers(kind: str) -> int:
            if kind not in family.attention:
                return 0
            if family.single_stream:
                return int(getattr(cfg, family.layers_field))
            return cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers

        _SIZES[key] = {**{kind: layers(kind) for kind in KINDS}, "heads": cfg.n_heads}
    return _SIZES[key]


def resolve_model(model: str, here: Path) -> Path | tuple[str, str]:
    """What a slide's ``model`` names: the bundled checkpoint, a path (relative to the lesson's folder), or an
    experiment (name, run) for ``experiment:<name>`` / ``experiment:<name>/baseline``. ValueError: none of these."""
    if model == "bundled":
        from resources import default_model

        found = default_model()
        if found is None:
            raise ValueError("the bundled model is not installed")
        return found
    if model.startswith("experiment:"):
        name, _, run = model.removeprefix("experiment:").partition("/")
        from model.experiments import VARIANTS

        if name not in {v.name for v in VARIANTS}:
            raise ValueError(f"no experiment named {name!r}")
        return name, run or "variant"
    path = (here / model).resolve()
    if not path.exists():
        raise ValueError(f"the model {model} is not there ({path})")
    return path


# -- writing ---------------------------------------------------------------------------------------------------------
def slide_toml(slide: Slide) -> str:
    """One ``[[slides]]`` entry as TOML (appended to a lesson file by "Add this as a slide")."""

    def entries(plain: dict[str, Any]) -> list[str]:  # a JSON string, number, bool or list is a TOML value too
        return [f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in plain.items()]

    lines = ["", "[[slides]]", *entries({"model": slide.model} if slide.model else {})]
    lines += entries({"text": slide.text, "text_zh": slide.text_zh})
    lines += ["[slides.scene]", *entries(_scene_plain(slide))]
    if slide.question is not None:
        lines += ["[slides.question]", *entries(_plain_question(slide.question))]
    return "\n".join(lines) + "\n"


def _plain_question(q: Question) -> dict[str, Any]:
    plain = asdict(q)
    plain["choices"], plain["choices_zh"] = list(q.choices), list(q.choices_zh)
    return plain


def append_slide(path: str | Path, slide: Slide, title: str = "A new lesson") -> None:
    """Add ``slide`` at the end of the lesson in ``path`` (a new lesson file if there is none yet); a JSON lesson
    gets it in its list, a TOML one as another ``[[slides]]`` table."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        plain: dict[str, Any] = {"title": title, "slides": []}
        if path.exists():
            plain = json.loads(path.read_text(encoding="utf-8"))
        entry: dict[str, Any] = {"text": slide.text, "text_zh": slide.text_zh, "scene": _scene_plain(slide)}
        if slide.model:
            entry["model"] = slide.model
        if slide.question is not None:
            entry["question"] = _plain_question(slide.question)
        plain.setdefault("slides", []).append(entry)
        path.write_text(json.dumps(plain, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return
    head = "" if path.exists() else f'title = {json.dumps(title, ensure_ascii=False)}\ntitle_zh = ""\n'
    with open(path, "a", encoding="utf-8") as out:
        out.write(head + slide_toml(slide))


def _scene_plain(slide: Slide) -> dict[str, Any]:
    scene = {k: v for k, v in asdict(slide.scene).items() if k != "name"}
    scene["steps"] = slide.steps
    return scene
