"""A failure is named on the engine thread (a message id and its fields, never translated there) and worded by the
window in its language, with the text a person read before the wording moved to the window."""

import ast
from pathlib import Path

import pytest

from explorer.answers import EngineMessage
from explorer.failures import (
    NO_MODEL,
    NOT_SAVED,
    RefusedRequest,
    decode_error_message,
    failure_message,
    failure_text,
)
from explorer.i18n import language, tr
from model.decoding.stepping import DecodeError

ROOT = Path(__file__).resolve().parents[1]
ENGINE_THREAD = ["worker.py", "engine_base.py", "engine_training.py", "engine_views.py", "engine_files.py"]
ENGINE_THREAD += ["engine_following.py", "engine_loading.py", "answers.py"]


@pytest.fixture
def chinese():
    language.set("zh")
    try:
        yield
    finally:
        language.set("en")


def test_a_refusal_is_worded_in_english_and_in_the_interface_language(chinese):
    saving = EngineMessage(NOT_SAVED, (("path", "/x/m.ckpt"), ("why", "Permission denied")))
    assert saving.worded() == (
        "/x/m.ckpt could not be saved (Permission denied); choose another folder or name, and save again."
    )
    assert failure_text(saving) == tr(NOT_SAVED).format(path="/x/m.ckpt", why="Permission denied")
    assert failure_text(saving) != saving.worded()  # (the fixture's language: Chinese)
    refused = RefusedRequest(EngineMessage(NO_MODEL))
    assert str(refused) == NO_MODEL and failure_text(failure_message(refused, training=False)) == tr(NO_MODEL)


def test_a_refusal_in_training_nests_its_words_in_the_training_message(chinese):
    said = failure_message(RefusedRequest(EngineMessage(NO_MODEL)), training=True)
    english = "{error} Training is paused and nothing was lost; Resume continues."
    assert said.worded() == english.format(error=NO_MODEL)
    assert failure_text(said) == tr(english).format(error=tr(NO_MODEL))


def test_the_engines_own_words_are_shown_as_they_are_braces_included():
    said = failure_message(ValueError("a line with {braces} in /data/pairs.tsv"), training=False)
    assert failure_text(said) == "a line with {braces} in /data/pairs.tsv"
    unexpected = failure_message(KeyError("{x}"), training=False)
    assert failure_text(unexpected) == (
        "Unexpected error: KeyError: '{x}'. This request was not carried out; training and your work are as they were."
    )
    assert decode_error_message(DecodeError("no_sentence", "no sentence")) == (
        "Type a sentence and press Enter to start decoding."
    )


def test_nothing_the_engine_thread_runs_calls_tr():
    """The engine thread names messages by their ids (``N_`` marks them); only the window translates."""
    calls = []
    for name in ENGINE_THREAD:
        tree = ast.parse((ROOT / "explorer" / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tr", "mark"):
                calls.append(f"{name}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "explorer.i18n":
                assert {a.name for a in node.names} <= {"N_"}, f"{name} imports {[a.name for a in node.names]}"
    assert not calls, calls
