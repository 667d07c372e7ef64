"""Lesson files (explorer/lessons/lesson.py, explorer/lessons/__main__.py): the bundled lessons pass the check; a
lesson's problems are each said (form, translations, questions, models and heads that are not there) and the
check exits 1; a slide added to a TOML or JSON lesson reads back as it was."""

import json
from dataclasses import replace

import pytest

from explorer.lessons import bundled_lessons
from explorer.lessons.__main__ import main
from explorer.lessons.lesson import LessonError, Question, Slide, append_slide, check_lesson, read_lesson
from explorer.presenter import Scene

GOOD = """
title = "A lesson"
title_zh = "一节课"
[[slides]]
model = "bundled"
text = "First"
text_zh = "第一"
[slides.scene]
view = "attention"
sentence = "I read a book yesterday."
steps = 2
attention_kind = "cross"
layer = 3
head = 4
[slides.question]
ask = "Which?"
ask_zh = "哪个？"
choices = ["a", "b"]
choices_zh = ["甲", "乙"]
answer = 1
"""


def test_the_bundled_lessons_pass_the_check(capsys):
    lessons = bundled_lessons()
    assert [p.name for p in lessons] == ["1-attention.toml", "2-decoding.toml", "3-parts.toml"]
    assert main(["--check"]) == 0
    assert capsys.readouterr().out.count(": ok") == 3
    for path in lessons:
        lesson = read_lesson(path)
        assert lesson.title_zh and len(lesson.slides) >= 9
        assert all(s.text and s.text_zh for s in lesson.slides)
        assert sum(s.question is not None for s in lesson.slides) >= 2


def test_a_good_lesson_reads_as_written(tmp_path):
    path = tmp_path / "l.toml"
    path.write_text(GOOD, encoding="utf-8")
    lesson = read_lesson(path)
    slide = lesson.slides[0]
    assert slide.scene.view == "attention" and slide.scene.layer == 3 and slide.steps == 2 and slide.model == "bundled"
    assert slide.question == Question("Which?", "哪个？", ("a", "b"), ("甲", "乙"), 1)
    assert slide.said("zh") == "第一" and lesson.title_in("zh") == "一节课"
    assert check_lesson(path) == []


@pytest.mark.parametrize(
    "change, said",
    [
        (('view = "attention"', 'view = "slides"'), "the view must be one of"),
        (('text_zh = "第一"', ""), "no Chinese text"),
        (("answer = 1", "answer = 2"), "the answer must be the index"),
        (('choices_zh = ["甲", "乙"]', 'choices_zh = ["甲"]'), "choices_zh must translate"),
        (("head = 4", "head = 5"), "layer 3, head 5 (the model has 3 layers of 4 heads)"),
        (('model = "bundled"', 'model = "nowhere.ckpt"'), "the model nowhere.ckpt is not there"),
        (('model = "bundled"', 'model = "experiment:no_such"'), "no experiment named 'no_such'"),
        (("steps = 2", "stepz = 2"), "unknown scene keys stepz"),
        (('title = "A lesson"', ""), "has no title"),
    ],
)
def test_each_problem_is_said_and_the_check_fails(tmp_path, capsys, change, said):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(*change), encoding="utf-8")
    problems = check_lesson(path)
    assert any(said in p for p in problems), problems
    assert main(["--check", str(path)]) == 1
    assert said in capsys.readouterr().out


def test_a_file_that_is_not_a_lesson_is_refused_with_why(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text("title = [", encoding="utf-8")
    with pytest.raises(LessonError, match="is not valid TOML"):
        read_lesson(path)
    path.write_text('title = "t"', encoding="utf-8")
    with pytest.raises(LessonError, match="has no slides"):
        read_lesson(path)
    assert check_lesson(tmp_path / "missing.toml")[0].startswith("cannot be read")


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_an_added_slide_reads_back_as_it_was(tmp_path, suffix):
    path = tmp_path / f"mine{suffix}"
    scene = replace(Scene(name="", view="tree"), sentence='He said "hi"\\ 你好', mode="beam", beam_size=3)
    first = Slide("Line one\nline two", "第一行", scene, model="bundled", steps=4)
    question = Question("a?", "甲？", ("x", "y"), ("X", "Y"), 1)
    second = Slide("Q", "问", Scene(name="", view="decoding"), question=question)
    append_slide(path, first)
    append_slide(path, second)
    lesson = read_lesson(path)
    assert [s.text for s in lesson.slides] == ["Line one\nline two", "Q"]
    got = lesson.slides[0]
    assert got.scene == replace(scene, name="slide 1") and got.steps == 4 and got.model == "bundled"
    assert lesson.slides[1].question == second.question
    if suffix == ".json":
        assert len(json.loads(path.read_text(encoding="utf-8"))["slides"]) == 2
