"""What every group of the engine's handlers shares (explorer/engine_base.py): the attention entropy of the probe,
the label and description of a run, the run it holds, its metrics sent in batches, its corpus described, a failure
worded on the window's thread."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.answers import EngineFailure, EngineMessage, LoadProgress, MetricsBatch, ModelOrigin, RunData  # noqa: E402
from explorer.engine_base import EngineBase, attention_entropy, run_info_of, run_label  # noqa: E402
from explorer.failures import NO_MODEL, RefusedRequest  # noqa: E402
from model.data import DataSpec  # noqa: E402
from model.data.stream import TokenizerSample  # noqa: E402
from model.data.tokenization import TokenizerSpec  # noqa: E402
from model.session import Session  # noqa: E402
from model.training.trainer import train_config_for  # noqa: E402


def test_attention_entropy_is_log_n_for_even_rows_and_zero_for_certain_ones():
    even = np.full((2, 3, 4, 5), 1 / 5)  # [layers, heads, queries, keys]
    assert np.allclose(attention_entropy(even), np.log(5)) and attention_entropy(even).shape == (2, 3)
    certain = np.zeros((1, 2, 3, 4))
    certain[..., 0] = 1.0
    assert np.allclose(attention_entropy(certain), 0.0)
    mixed = np.zeros((1, 1, 2, 2))
    mixed[0, 0] = [[0.5, 0.5], [1.0, 0.0]]  # one row of log 2, one of 0: their mean
    assert attention_entropy(mixed)[0, 0] == pytest.approx(np.log(2) / 2)


def test_attention_entropy_of_a_kind_the_model_lacks_is_zeros_and_read_only():
    none = attention_entropy(np.zeros((2, 4, 0, 0)))  # a decoder-only model has no cross-attention
    assert none.shape == (2, 4) and not none.any()
    with pytest.raises(ValueError):
        attention_entropy(np.full((1, 1, 2, 2), 0.5))[0, 0] = 1.0  # sent to another thread: never written


def _session(**model_overrides) -> Session:
    data = DataSpec(task="copy", n_train=200, n_valid=20, n_test=20, length=6, min_length=2, alphabet=8)
    train = train_config_for("tiny", eval_every=0, batch_size=16)
    return Session.create(data, "tiny", train, TokenizerSpec("word"), device="cpu", **model_overrides)


def test_a_run_is_labelled_by_its_task_preset_and_switches(qtbot):
    assert run_label(_session()) == "copy · tiny · post-LN · sinusoidal · ls 0.1 · noam"
    assert run_label(_session(norm="pre", positional="learned")) == "copy · tiny · pre-LN · learned · ls 0.1 · noam"


def test_what_the_window_is_told_of_a_run(qtbot):
    s = _session()
    s.train_steps(3)
    info = run_info_of(s, 5)
    assert (info.run_id, info.preset, info.weights_step, info.label) == (5, "tiny", 3, run_label(s))
    assert info.vocab_sizes == (s.src_tok.vocab_size, s.tgt_tok.vocab_size)
    assert len(info.src_pieces) == s.src_tok.vocab_size and len(info.tgt_pieces) == s.tgt_tok.vocab_size
    assert list(info.history_steps.step) == [1, 2, 3] and info.history_evals == ()
    assert len(info.schedule) >= 2000 and np.allclose(info.schedule, s.lr_schedule(len(info.schedule)))
    assert not info.schedule.flags.writeable
    assert info.total_parameters == sum(info.parameters.values()) == s.model.num_parameters()
    assert info.model_origin is None and info.mask_token is None  # made here; a translator has no masks
    s.notes["origin"] = {"model_type": "marian", "name": "opus-mt-en-zh", "folder": "/m"}
    assert run_info_of(s, 5).model_origin == ModelOrigin("marian", "opus-mt-en-zh", "/m")


def test_a_tokenizer_s_pieces_and_words_are_built_once(qtbot):
    """Another session on the same tokenizers (a followed run's next checkpoint) is sent the same tuples, which the
    window sees it has drawn already; other tokenizers get their own."""
    s = _session()
    info = run_info_of(s, 5)
    assert info.src_pieces == tuple(s.src_tok.display_token(i) for i in range(s.src_tok.vocab_size))
    assert info.tgt_pieces == tuple(s.tgt_tok.display_token(i) for i in range(s.tgt_tok.vocab_size))
    assert info.src_words == s.source_words()
    other = _session()
    other.src_tok, other.tgt_tok = s.src_tok, s.tgt_tok
    again = run_info_of(other, 6)
    assert again.src_pieces is info.src_pieces and again.tgt_pieces is info.tgt_pieces
    assert again.src_words is info.src_words
    fresh = run_info_of(_session(), 7)  # tokenizers of its own
    assert fresh.src_pieces is not info.src_pieces and fresh.src_words is not info.src_words


class Base:
    """The shared part of the engine on this thread (its signals arrive at once), and what it said."""

    def __init__(self, session=None) -> None:
        self.engine = EngineBase()
        self.engine.session = session
        self.batches: list[MetricsBatch] = []
        self.states: list = []
        self.failed: list[tuple[int, str]] = []
        self.data: list[RunData] = []
        self.progress: list[LoadProgress] = []
        e = self.engine
        e.metrics_logged.connect(self.batches.append)
        e.status_changed.connect(self.states.append)
        e.engine_failed.connect(lambda rid, text: self.failed.append((rid, text)))
        e.data_described.connect(self.data.append)
        e.load_progressed.connect(self.progress.append)


def test_the_run_held_and_whether_its_work_is_unsaved(qtbot):
    base = Base()
    with pytest.raises(RefusedRequest) as refused:
        base.engine._need_session()
    assert refused.value.message.text == NO_MODEL
    assert not base.engine._unsaved(None)
    s = _session()
    base.engine.session = s
    assert base.engine._need_session() is s and not base.engine._unsaved(s)
    s.train_steps(1)
    assert base.engine._unsaved(s)
    base.engine._publish_status()
    assert base.states[-1].dirty and base.states[-1].step == 1


def test_metrics_go_out_at_most_every_50_ms_unless_forced(qtbot):
    s = _session()
    base = Base(s)
    base.engine._run_id = 2
    records = [done.to_dict() for done in s.train_steps(3)]
    base.engine._pending_steps = records[:1]
    base.engine._flush_metrics()
    assert [list(b.steps.step) for b in base.batches] == [[1]] and base.batches[0].run_id == 2
    base.engine._pending_steps = records[1:]
    base.engine._last_flush = time.perf_counter()  # (the last batch went just now)
    base.engine._flush_metrics()  # within 50 ms of the last batch: kept
    assert len(base.batches) == 1
    base.engine._flush_metrics(force=True)
    assert [list(b.steps.step) for b in base.batches] == [[1], [2, 3]] and base.engine._pending_steps == []
    assert base.states  # each batch comes with the status
    base.engine._flush_metrics(force=True)  # nothing pending: nothing sent
    assert len(base.batches) == 2


def test_the_corpus_is_described_or_why_it_cannot_be(qtbot, monkeypatch):
    s = _session()
    base = Base(s)
    base.engine._run_id = 4
    base.engine._describe_data()
    [described] = base.data
    corpus = described.corpus
    assert (described.run_id, corpus.name, corpus.train, corpus.valid, corpus.test) == (4, "copy", 200, 20, 20)
    assert corpus.error is None and len(described.samples) == 40
    source, target = described.samples[0]
    assert " ".join(source.pieces) == s.corpus.train[0][0] and not source.unknown
    monkeypatch.setattr(type(s), "corpus", property(lambda self: (_ for _ in ()).throw(OSError("pairs.tsv moved"))))
    base.engine._describe_data()
    assert base.data[-1].corpus.error == "pairs.tsv moved" and base.data[-1].samples == ()


def test_a_failure_is_worded_on_the_window_s_thread_and_progress_is_named_after_the_file(qtbot):
    base = Base()
    base.engine.failure_named.emit(EngineFailure(9, EngineMessage(NO_MODEL)))
    assert base.failed == [(9, NO_MODEL)]
    report = base.engine._data_progress(7, DataSpec(task=None, path="/data/big.tsv"))
    report("training the tokenizers", None, TokenizerSample(100))
    assert base.progress == [LoadProgress(7, "big.tsv", "training the tokenizers", -1.0, TokenizerSample(100))]
