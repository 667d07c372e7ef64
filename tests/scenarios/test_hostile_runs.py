"""Followed runs whose files lie or misbehave: pipes where files should be, probe snapshots that are cut short,
huge, mistyped or zip bombs, log lines without an end or with values of the wrong type. Each is skipped with a
message naming the file and what is wrong, or counted as a bad line; none blocks the engine or raises anything
but the project's own errors."""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from model.io import follow
from model.io.snapshots import Inspection, RouterView
from tests.blocking import finishes

fifo_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX thing")


def inspection(step: int = 3) -> Inspection:
    """A small encoder–decoder probe with one router: 2 layers, 2 heads, 3 source and 4 target tokens."""
    rng = np.random.default_rng(0)
    S, T = 3, 4
    router = RouterView(
        "encoder", 0, ["a", "b", "c"], rng.random((S, 4)), np.array([[0, 1], [2, 3], [1, 0]]), rng.random((S, 2))
    )
    return Inspection(
        ["a", "b", "c"],
        ["<bos>", "x", "y", "z"],
        ["x", "y", "z", "<eos>"],
        rng.random((2, 2, S, S)),
        rng.random((2, 2, T, T)),
        rng.random((2, 2, T, S)),
        rng.random(T),
        True,
        step,
        "a b c",
        (5, 6, 7),
        {"encoder": np.ones((S, S), bool), "cross": np.ones((T, S), bool)},
        (router,),
    )


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=True)
    return buf.getvalue()


def rezip(path: Path, parts: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return path


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return follow.write_probe(tmp_path / "probe", inspection())


def changed(good: Path, **replace: bytes) -> Path:
    """A copy of the probe ``good`` with the members named (without .npy) replaced."""
    parts = members(good)
    parts.update({f"{name}.npy": data for name, data in replace.items()})
    return rezip(good.with_name("step-000000099.npz"), parts)


def with_meta(good: Path, change: Callable[[dict[str, Any]], Any]) -> Path:
    parts = members(good)
    meta = json.loads(str(np.load(io.BytesIO(parts["meta.npy"]))))
    change(meta)
    return changed(good, meta=npy(np.array(json.dumps(meta))))


def unblock(fifo: Path) -> None:
    """Let a reader blocked on opening ``fifo`` go (a writer arrives and leaves)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_a_good_probe_still_reads_back(good):
    back = follow.read_probe(good)
    want = inspection()
    assert back.src_tokens == want.src_tokens and back.step == 3 and back.routing[0].tokens == ["a", "b", "c"]
    assert np.abs(back.cross - want.cross).max() < 1e-3 and (back.routing[0].chosen == want.routing[0].chosen).all()


# -- pipes where files should be -----------------------------------------------------------------------------------
@fifo_only
def test_a_pipe_named_like_a_probe_is_skipped_without_blocking(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("")
    (tmp_path / "probe").mkdir()
    fifo = tmp_path / "probe" / "step-000000001.npz"
    os.mkfifo(fifo)
    watcher = follow.RunWatcher(tmp_path)
    assert watcher.poll().probes == [fifo]
    try:
        result = finishes(lambda: follow.read_probe(fifo))
        assert isinstance(result, follow.ProbeError), result
        assert str(fifo) in str(result) and "not a regular file" in str(result)
        assert finishes(lambda: watcher.read_probe(fifo)) is None and watcher.skipped_probes == 1
        assert "not a regular file" in watcher.problem
    finally:
        unblock(fifo)


@fifo_only
def test_a_pipe_as_the_checkpoint_or_the_log_is_never_opened(tmp_path):
    os.mkfifo(tmp_path / "model.ckpt")
    os.mkfifo(tmp_path / "metrics.jsonl")
    try:
        watcher = follow.RunWatcher(tmp_path)
        poll = finishes(watcher.poll)
        assert isinstance(poll, follow.Poll), poll
        assert not poll.checkpoint and poll.records == []  # the engine would block reading a pipe as a checkpoint
        assert "model.ckpt" in watcher.problem and "not a regular file" in watcher.problem
    finally:
        unblock(tmp_path / "model.ckpt")
        unblock(tmp_path / "metrics.jsonl")


# -- probe snapshots that lie --------------------------------------------------------------------------------------
def test_an_empty_or_cut_short_probe_is_a_probe_error(good):
    data = good.read_bytes()
    empty = good.with_name("step-000000010.npz")
    empty.write_bytes(b"")
    with pytest.raises(follow.ProbeError, match=f"{empty}.* is empty"):
        follow.read_probe(empty)
    for cut in (len(data) // 2, len(data) - 10, 30):
        short = good.with_name("step-000000011.npz")
        short.write_bytes(data[:cut])
        with pytest.raises(follow.ProbeError, match=f"{short}.*cut short"):
            follow.read_probe(short)
    damaged = good.with_name("step-000000012.npz")  # the directory intact, an array's bytes flipped
    damaged.write_bytes(data.replace(b"<f2", b"|O8", 1))
    with pytest.raises(follow.ProbeError, match=str(damaged)):
        follow.read_probe(damaged)


def test_a_huge_declared_shape_is_refused_before_anything_is_allocated(good):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (10**8, 10**8, 4, 4)}
    )
    bad = changed(good, encoder=header.getvalue() + b"\x00" * 64)  # 1.78 PiB declared, 64 bytes stored
    with pytest.raises(follow.ProbeError, match=r"encoder.*declares .*more than the 64 B stored"):
        follow.read_probe(bad)


def test_a_zip_bomb_member_is_refused_from_its_declared_size(good, monkeypatch):
    monkeypatch.setattr(follow, "PROBE_LIMIT", 256 << 10)
    bomb = np.zeros((8192, 2, 3, 3), np.float16)  # 288 KB of zeros: a few hundred bytes compressed
    parts = members(good)
    parts["encoder.npy"] = npy(bomb)
    path = rezip(good.with_name("step-000000013.npz"), parts, zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 64 << 10
    with pytest.raises(follow.ProbeError, match=r"declares 2\d\d KB of arrays, more than a probe .* \(256 KB\)"):
        follow.read_probe(path)
    bz2 = rezip(good.with_name("step-000000017.npz"), parts, zipfile.ZIP_BZIP2)  # no bound on one read's output
    with pytest.raises(follow.ProbeError, match="compressed in a way probe snapshots never are"):
        follow.read_probe(bz2)
    big = good.with_name("step-000000014.npz")
    big.write_bytes(good.read_bytes() + b"\x00" * (300 << 10))
    with pytest.raises(follow.ProbeError, match=r"is 3\d\d KB, more than a probe snapshot may be"):
        follow.read_probe(big)


def test_too_many_members_are_refused_before_the_directory_is_read(good, monkeypatch):
    monkeypatch.setattr(follow, "PROBE_MEMBERS", 50)
    parts = members(good)
    parts.update({f"junk{i}.npy": b"" for i in range(200)})
    with pytest.raises(follow.ProbeError, match="210 members, more than"):
        follow.read_probe(rezip(good.with_name("step-000000015.npz"), parts))


@pytest.mark.parametrize(
    "change, what",
    [
        (lambda m: m.update(src_tokens=5), "src_tokens"),
        (lambda m: m.update(step="x"), "step"),
        (lambda m: m.update(step=-1), "step"),
        (lambda m: m.update(teacher_forced="yes"), "teacher_forced"),
        (lambda m: m.update(target_ids=["a"]), "target_ids"),
        (lambda m: m.update(routing=[1]), "routing"),
        (lambda m: m["routing"][0].update(layer="first"), "routing"),
        (lambda m: m.update(arch="rnn"), "arch"),
        (lambda m: m.pop("out_tokens"), "out_tokens"),
        (lambda m: m.update(src_tokens=["a", "b"]), "encoder"),  # the maps no longer fit the tokens
        (lambda m: m.update(out_tokens=["x"]), "target_probs"),
    ],
)
def test_mistyped_metadata_is_named(good, change, what):
    with pytest.raises(follow.ProbeError, match=f"{what}"):
        follow.read_probe(with_meta(good, change))


@pytest.mark.parametrize(
    "member, array, what",
    [
        ("meta", np.array(["not", "json"]), "meta"),
        ("meta", np.array("[1, 2]"), "meta"),
        ("meta", np.array("{"), "meta"),
        ("cross", np.ones((2, 2, 3, 3), np.float16), "cross"),
        ("encoder", np.ones((3, 3), np.float16), "encoder"),
        ("mask_encoder", np.ones((4, 4), bool), "mask_encoder"),
        ("target_probs", np.array(["a", "b", "c", "d"]), "target_probs"),
        ("route0_chosen", np.array([[0, 9], [0, 1], [0, 1]], np.int16), "route0_chosen"),
        ("route0_weights", np.ones((3, 5), np.float16), "route0_weights"),
    ],
)
def test_arrays_that_do_not_fit_are_named(good, member, array, what):
    with pytest.raises(follow.ProbeError, match=what):
        follow.read_probe(changed(good, **{member: npy(array)}))


def test_a_missing_or_pickled_member_is_named(good):
    parts = members(good)
    del parts["cross.npy"]
    with pytest.raises(follow.ProbeError, match="cross.* missing"):
        follow.read_probe(rezip(good.with_name("step-000000016.npz"), parts))
    with pytest.raises(follow.ProbeError, match="encoder.*Python objects"):
        follow.read_probe(changed(good, encoder=npy(np.array([None, 1], dtype=object))))


def test_the_watcher_counts_skipped_probes_and_says_why(tmp_path, good):
    (tmp_path / "metrics.jsonl").write_text("")
    bad = good.with_name("step-000000020.npz")
    bad.write_bytes(b"PK\x03\x04 not really")
    watcher = follow.RunWatcher(tmp_path)
    assert watcher.read_probe(good) is not None and watcher.skipped_probes == 0
    assert watcher.read_probe(bad) is None and watcher.skipped_probes == 1
    assert str(bad) in watcher.problem and "skipped" in watcher.problem
    assert watcher.read_probe(tmp_path / "probe" / "step-000000077.npz") is None  # thinned out meanwhile: no fuss
    assert watcher.skipped_probes == 1


# -- the log -------------------------------------------------------------------------------------------------------
def record(step: int, **over: Any) -> str:
    return json.dumps(
        {
            "step": step,
            "time": 0.5,
            "loss": 2.0,
            "lr": 1e-3,
            "token_accuracy": 0.1,
            "grad_norm": 1.0,
            "tokens_per_s": 1000.0,
            **over,
        }
    )


def test_log_records_with_values_of_the_wrong_type_are_bad_lines(tmp_path):
    log = tmp_path / "metrics.jsonl"
    evaluation = {"step": 4, "split": "valid", "loss": 2.0, "exact_match": 0.5, "bleu": 12.0, "sentences": 10}
    lines = [
        record(1),
        json.dumps({**evaluation, "bleu": "x"}),
        record(2, loss=True),
        record(3).replace("3", '"3"', 1),
        record(4, lr=[1]),
        record(5, expert_load="abc"),
        record(6, expert_load=[0.5, "x"]),
        record(7).replace("7", "Infinity", 1),
        json.dumps({**evaluation, "split": 5}),
        json.dumps({k: v for k, v in evaluation.items() if k != "loss"}),
        record(8).replace("0.5", "1" + "0" * 400),  # an integer no float can hold
        record(9, grad_norm=None),
        json.dumps({"step": 10, "loss": 1.0}),  # a loop's line (RunWriter) with only its loss: a record
        "[" * 100_000 + "]" * 100_000,  # nested deeper than the parser recurses
        record(11, expert_load=[0.5, 0.5]),
        json.dumps(evaluation),
    ]
    log.write_text("\n".join(lines) + "\n")
    tail = follow.MetricsTail(log)
    records, _ = tail.read()
    assert [r["step"] for r in records] == [1, 10, 11, 4] and tail.bad == len(lines) - 4


def test_a_log_line_without_an_end_is_dropped_without_being_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(follow, "LINE_LIMIT", 64 << 10)
    monkeypatch.setattr(follow, "READ_LIMIT", 16 << 10)
    log = tmp_path / "metrics.jsonl"
    log.write_text(record(1) + "\n")
    tail = follow.MetricsTail(log)
    assert [r["step"] for r in tail.read()[0]] == [1]
    kept = []
    with open(log, "a") as f:
        for _ in range(64):  # 2 MB of one line, arriving over many polls
            f.write('{"step": 2, "x": "' + "y" * (32 << 10))
            f.flush()
            while True:
                records, _ = tail.read()
                assert records == []
                kept.append(len(tail.partial))
                if tail.pos == log.stat().st_size:
                    break
        f.write('"}\n' + record(3) + "\n" + record(4)[:10])
    records, _ = tail.read()
    assert [r["step"] for r in records] == [3] and tail.bad == 1
    assert max(kept) <= 64 << 10  # never more than the limit held, never joined again and again
    with open(log, "a") as f:
        f.write(record(4)[10:] + "\n" + "z" * (100 << 10) + "\n" + record(5) + "\n")
    steps = []
    while tail.pos < log.stat().st_size:  # a long line with its end: dropped as it passes, in 16 KB reads
        steps += [r["step"] for r in tail.read()[0]]
        kept.append(len(tail.partial))
    assert steps == [4, 5] and tail.bad == 2 and max(kept) <= 64 << 10
