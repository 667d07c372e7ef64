"""What the engine sends the window (explorer/answers.py): a message worded where it is shown, an evaluation read
from a log record, where a model read from a Hugging Face folder came from, an experiment's title."""

from __future__ import annotations

import math

from explorer.answers import EngineMessage, Evaluation, ExperimentInfo, ModelOrigin

WORDS = {
    "Opening {name}": "打开 {name}",
    "{path} could not be saved ({why})": "无法保存 {path}（{why}）",
    "disk full": "磁盘已满",
    "{error} Training is paused.": "{error} 训练已暂停。",
}


def translated(text: str) -> str:
    """A stand-in for ``tr`` with a few words of its own."""
    return WORDS.get(text, text)


def test_a_message_is_worded_with_its_fields_each_translated_once():
    plain = EngineMessage("Opening {name}")
    assert plain.worded() == "Opening {name}" and plain.worded(translated) == "打开 {name}"  # no fields: not filled
    inner = EngineMessage("disk full")
    said = EngineMessage("{path} could not be saved ({why})", (("path", "/tmp/a.ckpt"), ("why", inner)))
    assert said.worded() == "/tmp/a.ckpt could not be saved (disk full)"
    # the id and the message in a field are translated; a plain value (a path) is not
    assert said.worded(translated) == "无法保存 /tmp/a.ckpt（磁盘已满）"


def test_the_engine_s_own_words_are_never_translated():
    words = EngineMessage.as_is("pairs.tsv, line 3: no tab {between}")  # (braces and all)
    assert not words.translate and words.worded(translated) == "pairs.tsv, line 3: no tab {between}"
    nested = EngineMessage("{error} Training is paused.", (("error", words),))
    assert nested.worded(translated) == "pairs.tsv, line 3: no tab {between} 训练已暂停。"


def test_an_evaluation_read_from_a_record_has_nan_for_what_its_family_lacks():
    e = Evaluation.of({"step": 50.0, "split": "valid", "loss": "2.5", "bleu": 31, "expert_load": [0.5, 0.25, 0.25]})
    assert (e.step, e.split, e.loss, e.bleu, e.expert_load) == (50, "valid", 2.5, 31.0, (0.5, 0.25, 0.25))
    assert isinstance(e.step, int) and isinstance(e.bleu, float)
    assert all(math.isnan(getattr(e, k)) for k in ("exact_match", "perplexity", "mlm_accuracy", "nsp_accuracy"))
    assert math.isnan(e.aux_loss)
    assert Evaluation.of({"step": 9, "split": "test", "loss": 1, "perplexity": 4.0}).split == "test"
    assert Evaluation.of({"step": 9, "split": "train", "loss": 1}).split == "valid"  # not test: the held-out split
    assert Evaluation.of({"step": 9, "split": "test", "loss": 1}).expert_load == ()


def test_the_origin_of_a_model_is_read_from_its_notes_when_they_hold_one():
    assert ModelOrigin.of({}) is None  # made here
    assert ModelOrigin.of({"origin": "marian"}) is None
    assert ModelOrigin.of({"origin": {"model_type": 7, "name": "x"}}) is None
    origin = ModelOrigin.of(
        {"origin": {"model_type": "marian", "name": None, "folder": "/m/opus-mt-en-zh", "architectures": ["M", 2]}}
    )
    assert origin == ModelOrigin("marian", "", "/m/opus-mt-en-zh", ("M", "2"))
    assert ModelOrigin.of({"origin": {"model_type": "gpt2", "architectures": "GPT2LMHeadModel"}}) == ModelOrigin(
        "gpt2", "", "", ()
    )


def test_an_experiment_is_titled_in_the_interface_language():
    info = ExperimentInfo(
        "no_residual", "No residual", "无残差", "", "", "exact_match", "lower", 300, "variant", (1, 2)
    )
    assert info.titled(zh=False) == "No residual" and info.titled(zh=True) == "无残差"
