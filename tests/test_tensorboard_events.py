"""model.io.tensorboard_events: the scalars of TensorBoard event files in a followed folder, read while they grow.

Every expected value comes from what the test itself wrote (with torch's SummaryWriter, or TensorBoard's own
record writer), rounded to float32 as the files hold them."""

from __future__ import annotations

import io
import os
import shutil
import struct
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c  # noqa: E402
from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402
from torch.utils.tensorboard import SummaryWriter  # noqa: E402

from model.io import tensorboard_events as tbe  # noqa: E402
from model.io.tensorboard_events import MISSING, EventScalars, event_files  # noqa: E402


def f32(x: float) -> float:
    return float(np.float32(x))


def write_scalars(log_dir: Path, points: dict[str, list[tuple[int, float]]]) -> Path:
    """Write ``points`` (tag -> [(step, value)]) with a SummaryWriter; the event file it wrote."""
    before = set(log_dir.glob("events.out.tfevents.*"))
    writer = SummaryWriter(str(log_dir))
    for tag, pairs in points.items():
        for step, value in pairs:
            writer.add_scalar(tag, value, step)
    writer.close()
    (path,) = set(log_dir.glob("events.out.tfevents.*")) - before
    return path


def expected(points: dict[str, list[tuple[int, float]]]) -> dict[str, tuple[list[int], list[float]]]:
    return {tag: ([s for s, _ in pairs], [f32(v) for _, v in pairs]) for tag, pairs in points.items()}


def record_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each TFRecord in an event file's bytes."""
    spans, i = [], 0
    while i < len(data):
        (length,) = struct.unpack_from("<Q", data, i)
        spans.append((i, i + 16 + length))
        i += 16 + length
    assert i == len(data)
    return spans


def framed(*events: event_pb2.Event) -> bytes:
    """The events as TensorBoard's own record writer frames them."""
    out = io.BytesIO()
    writer = RecordWriter(out)
    for event in events:
        writer.write(event.SerializeToString())
    return out.getvalue()


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


def read_all(reader: EventScalars, polls: int = 50) -> dict[str, tuple[list[int], list[float]]]:
    """Everything the reader gives over as many reads as it takes."""
    got: dict[str, tuple[list[int], list[float]]] = {}
    for _ in range(polls):  # a read may give nothing and the next one more (after a record stepped over)
        points, _ = reader.read()
        for tag, (steps, values) in points.items():
            got.setdefault(tag, ([], []))
            got[tag][0].extend(steps)
            got[tag][1].extend(values)
    return got


POINTS = {"train/loss": [(0, 2.5), (10, 1.7), (20, 1.1)], "train/learning_rate": [(0, 1e-3), (10, 9e-4), (20, 8e-4)]}


def test_summary_writer_scalars_then_only_the_new_ones(tmp_path):
    writer = SummaryWriter(str(tmp_path))
    for tag, pairs in POINTS.items():
        for step, value in pairs:
            writer.add_scalar(tag, value, step)
    writer.add_histogram("weights", np.arange(10.0), 0)  # not scalars: passed over
    writer.add_text("notes", "a run", 0)
    writer.flush()
    reader = EventScalars(tmp_path)
    assert reader.read() == (expected(POINTS), False)
    assert reader.read() == ({}, False)
    writer.add_scalar("train/loss", 0.75, 30)
    writer.add_scalar("eval/bleu", 12.25, 30)
    writer.close()
    assert reader.read() == ({"train/loss": ([30], [0.75]), "eval/bleu": ([30], [12.25])}, False)
    assert (reader.bad, reader.problem) == (0, "")


def test_a_torn_last_record_waits_for_its_rest(tmp_path):
    source = tmp_path / "source"
    data = write_scalars(source, POINTS).read_bytes()
    folder = tmp_path / "run"
    folder.mkdir()
    start, end = record_spans(data)[-1]
    cut = (start + end) // 2
    path = folder / "events.out.tfevents.1.host.1.0"
    path.write_bytes(data[:cut])
    reader = EventScalars(folder)
    whole = expected(POINTS)
    last_tag = list(POINTS)[-1]  # the last record written
    first = {tag: (s[:-1], v[:-1]) if tag == last_tag else (s, v) for tag, (s, v) in whole.items()}
    assert reader.read() == (first, False)
    assert reader.read() == ({}, False)
    with open(path, "ab") as f:
        f.write(data[cut:])
    assert reader.read() == ({last_tag: ([whole[last_tag][0][-1]], [whole[last_tag][1][-1]])}, False)
    assert reader.bad == 0


def test_a_truncated_or_replaced_file_starts_everything_again(tmp_path):
    long = {"loss": [(s, 1.0 / (s + 1)) for s in range(6)]}
    short = {"loss": [(s, 10.0 + s) for s in range(2)]}
    longer = {"loss": [(s, 20.0 + s) for s in range(9)]}
    sources = [write_scalars(tmp_path / name, p).read_bytes() for name, p in (("a", long), ("b", short), ("c", longer))]
    folder = tmp_path / "run"
    folder.mkdir()
    path = folder / "events.out.tfevents.1.host.1.0"
    path.write_bytes(sources[0])
    reader = EventScalars(folder)
    assert reader.read() == (expected(long), False)
    with open(path, "r+b") as f:  # truncated in place, the same inode
        f.truncate(0)
        f.write(sources[1])
    assert reader.read() == (expected(short), True)
    with open(path, "r+b") as f:  # rewritten in place, longer than before: its first record differs
        f.write(sources[2])
    assert reader.read() == (expected(longer), True)
    other = folder / "new"
    other.write_bytes(sources[0])
    os.replace(other, path)  # replaced: another inode
    assert reader.read() == (expected(long), True)
    assert reader.read() == ({}, False)


def test_a_damaged_record_is_counted_and_the_rest_is_read(tmp_path):
    points = {"loss": [(s, 0.5 * s) for s in range(8)]}
    data = bytearray(write_scalars(tmp_path / "source", points).read_bytes())
    spans = record_spans(bytes(data))
    start, end = spans[4]  # the 4th scalar (the 1st record is the file's version)
    data[end - 6] ^= 0xFF  # a byte of the event itself: its checksum fails
    folder = tmp_path / "run"
    (folder / "bad").mkdir(parents=True)
    damaged = folder / "bad" / "events.out.tfevents.1.host.1.0"
    damaged.write_bytes(bytes(data))
    good = {"bleu": [(1, 3.0), (2, 4.0)]}
    write_scalars(folder / "good", good)
    reader = EventScalars(folder)
    got = reader.read()[0]
    kept = points["loss"][:3] + points["loss"][4:]
    assert got == {**expected({"loss": kept}), **expected(good)}
    assert reader.bad == 1
    assert str(damaged) in reader.problem and f"byte {start}" in reader.problem


def test_a_damaged_length_is_passed_over_to_the_next_whole_record(tmp_path):
    points = {"loss": [(s, 1.5 * s) for s in range(8)]}
    data = bytearray(write_scalars(tmp_path / "source", points).read_bytes())
    start, _ = record_spans(bytes(data))[3]
    data[start + 1] ^= 0x40  # the length of the 3rd scalar: where the next record starts is not known
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "events.out.tfevents.1.host.1.0").write_bytes(bytes(data) + b"\x00" * 40)  # and a tail of zeros
    reader = EventScalars(folder)
    kept = points["loss"][:2] + points["loss"][3:]
    assert read_all(reader) == expected({"loss": kept})
    assert reader.bad == 2  # the length, and the zeros at the end
    assert "damaged at byte" in reader.problem


def test_bytes_that_are_no_event_and_hostile_lengths(tmp_path):
    scalar = event_pb2.Event(step=3, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="x")]))
    scalar.summary.value[0].simple_value = 2.0
    big = event_pb2.Event(step=4)
    big.summary.value.add(tag="big", simple_value=1.0)
    big.summary.value[0].metadata.summary_description = "z" * (tbe.RECORD_LIMIT + 10)  # stepped over unread
    out = io.BytesIO()
    RecordWriter(out).write(b"\xff\xff\xff\xff not an event")  # a whole record whose bytes are no Event
    data = framed(scalar) + out.getvalue() + framed(big) + framed(scalar)
    header = struct.pack("<Q", 1 << 50)  # a record that says it is a petabyte long, its length's checksum right
    data += header + struct.pack("<I", masked_crc32c(header)) + b"abc"
    (tmp_path / "events.out.tfevents.1.host.1.0").write_bytes(data)
    reader = EventScalars(tmp_path)
    assert read_all(reader) == {"x": ([3, 3], [2.0, 2.0])}
    assert reader.bad == 1
    assert "no TensorBoard event" in reader.problem
    assert reader.read() == ({}, False)  # the petabyte record waits, as a torn one does


def test_a_pipe_named_like_an_event_file_is_never_opened(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    write_scalars(tmp_path / "good", POINTS)
    os.mkfifo(tmp_path / "events.out.tfevents.9.host.9.9")
    results: list[tuple] = []
    reader = EventScalars(tmp_path)
    thread = threading.Thread(target=lambda: results.append(reader.read()), daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "read() waited on a named pipe"
    assert results == [(expected(POINTS), False)]
    assert "named pipe" in reader.problem and "events.out.tfevents.9.host.9.9" in reader.problem


def test_runs_folders_and_tags_shared_by_runs(tmp_path):
    folder = tmp_path / "out"
    a = {"train/loss": [(0, 3.0), (5, 2.0)], "train/lr": [(0, 0.1)]}
    b = {"train/loss": [(0, 4.0), (5, 3.5)]}
    write_scalars(folder / "runs" / "A", a)
    write_scalars(folder / "runs" / "B", b)
    (folder / "checkpoint-500").mkdir()
    reader = EventScalars(folder)
    got = reader.read()[0]
    assert got == {
        "A/train/loss": expected(a)["train/loss"],
        "train/lr": expected(a)["train/lr"],
        "B/train/loss": expected(b)["train/loss"],
    }
    # a third run makes train/lr shared: everything again, under the new names
    c = {"train/lr": [(1, 0.2)]}
    write_scalars(folder / "runs" / "C", c)
    points, reset = reader.read()
    assert reset
    assert points == {
        "A/train/loss": expected(a)["train/loss"],
        "A/train/lr": expected(a)["train/lr"],
        "B/train/loss": expected(b)["train/loss"],
        "C/train/lr": expected(c)["train/lr"],
    }


def test_a_runs_folder_beside_and_a_restarted_writer(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    run = tmp_path / "runs" / "Jan01_host"
    first = {"loss": [(0, 1.0), (1, 0.9)]}
    second = {"loss": [(2, 0.8), (3, 0.7)]}  # a restarted writer: a second file in the same run folder
    write_scalars(run, first)
    write_scalars(run, second)
    assert event_files(folder) == sorted(run.glob("events.out.tfevents.*"))
    assert EventScalars(folder).read() == (expected({"loss": first["loss"] + second["loss"]}), False)
    # once the folder has event files of its own, the runs beside it are not read
    write_scalars(folder, {"own": [(0, 5.0)]})
    assert EventScalars(folder).read() == (expected({"own": [(0, 5.0)]}), False)


def test_the_search_is_bounded_in_depth(tmp_path):
    source = write_scalars(tmp_path / "src", POINTS)
    deep = tmp_path.joinpath(*"abcdef")
    shallow = tmp_path / "runs" / "x" / "loss_train"  # SummaryWriter.add_scalars' folders
    for where in (deep, shallow.parent, shallow):
        where.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, where / "events.out.tfevents.1.host.1.0")
    (tmp_path / "loop").symlink_to(tmp_path)
    found = event_files(tmp_path)
    assert deep / "events.out.tfevents.1.host.1.0" not in found
    assert shallow / "events.out.tfevents.1.host.1.0" in found
    assert shallow.parent / "events.out.tfevents.1.host.1.0" in found


def test_tensor_form_scalars(tmp_path):
    from tensorboard.plugins.histogram import metadata as histogram_metadata
    from tensorboard.plugins.scalar import metadata as scalar_metadata
    from tensorboard.plugins.text import metadata as text_metadata

    def event(step, tag, x, metadata=None):
        v = summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(x))
        if metadata is not None:
            v.metadata.CopyFrom(metadata)
        return event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[v]))

    scalars = scalar_metadata.create_summary_metadata(display_name="", description="")
    by_class = summary_pb2.SummaryMetadata(data_class=summary_pb2.DATA_CLASS_SCALAR)  # no plugin named
    events = [
        event(3, "acc", np.float64(0.25), scalars),  # tf.summary (v2): the metadata on a tag's first value only
        event(4, "acc", np.float64(0.5)),
        event(6, "tokens", np.int64(1 << 40), scalars),
        event(7, "half", np.float16(0.125), by_class),
        event(8, "hist", np.ones((3, 3)), histogram_metadata.create_summary_metadata("", "")),
        event(9, "text", np.array("words", dtype=object), text_metadata.create_summary_metadata("", "")),
        event(10, "unmarked", np.float32(3.0)),  # a tensor nothing calls a scalar
        event(11, "wide", np.ones(5, dtype=np.float32), scalars),  # five numbers are no scalar
    ]
    (tmp_path / "events.out.tfevents.1.host.1.0").write_bytes(framed(*events))
    reader = EventScalars(tmp_path)
    assert reader.read() == (
        {"acc": ([3, 4], [0.25, 0.5]), "tokens": ([6], [float(1 << 40)]), "half": ([7], [0.125])},
        False,
    )
    assert reader.bad == 0


def test_without_tensorboard_a_sentence_and_nothing_read(tmp_path, monkeypatch):
    write_scalars(tmp_path, POINTS)
    for name in [n for n in sys.modules if n == "tensorboard" or n.startswith("tensorboard.")]:
        monkeypatch.setitem(sys.modules, name, None)  # an import of it now fails
    reader = EventScalars(tmp_path)
    assert reader.read() == ({}, False)
    assert reader.problem == MISSING and "pip install tensorboard" in MISSING
    assert EventScalars(tmp_path / "empty").read() == ({}, False)


def test_a_long_backlog_arrives_over_several_reads_and_nothing_is_written(tmp_path):
    points = {"loss": [(s, s / 7.0) for s in range(12_000)], "lr": [(s, 1.0 / (s + 1)) for s in range(0, 12_000, 3)]}
    write_scalars(tmp_path / "runs" / "r", points)
    before = snapshot(tmp_path)
    reader = EventScalars(tmp_path)
    first, _ = reader.read()
    assert 0 < sum(len(s) for s, _ in first.values()) < 16_000
    rest = read_all(reader)
    for tag, (steps, values) in rest.items():
        first.setdefault(tag, ([], []))
        first[tag][0].extend(steps)
        first[tag][1].extend(values)
    assert first == expected(points)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("lengths", [[28] * 20, [5, 30, 30, 999] * 9, [1] * 8 + [0] * 8])
def test_checksums_of_many_records_equal_tensorboards(lengths):
    rng = np.random.default_rng(len(lengths))
    payloads = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    tensorboard = tbe._tensorboard()
    assert not isinstance(tensorboard, str)
    assert tbe._masked_crcs(payloads, tensorboard) == [masked_crc32c(p) for p in payloads]


def tensorboards_view(folder: Path, tags: list[str]) -> dict[str, tuple[list[int], list[float]]]:
    """What TensorBoard itself shows of a run folder's scalars (its EventAccumulator, orphaned data purged)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    accumulator.Reload()
    scalars = {tag: accumulator.Scalars(tag) for tag in tags}
    return {tag: ([e.step for e in events], [e.value for e in events]) for tag, events in scalars.items()}


def restarted_writer(folder: Path, purge_step: int | None) -> None:
    """A second SummaryWriter in the same folder, as a run resumed from step 5's checkpoint writes it."""
    before = set(folder.glob("events.out.tfevents.*"))
    writer = SummaryWriter(str(folder), purge_step=purge_step)
    for step in range(5, 13):
        writer.add_scalar("loss", 100.0 + step, step)
    writer.close()
    assert len(set(folder.glob("events.out.tfevents.*")) - before) == 1  # (named after the first: read after it)


def test_a_writer_restarted_with_purge_step_drops_the_points_it_replaces_as_tensorboard_does(tmp_path):
    """A run resumed from an earlier checkpoint writes a new event file from that step; with purge_step its writer
    says so (a SessionLog START), and TensorBoard drops every tag's points from that step on. Read in one go, and
    read as it happens (the first file read, then the restarted writer's): both equal TensorBoard's own view."""
    first = {"loss": [(s, 10.0 - s) for s in range(10)], "lr": [(3, 2.0), (9, 1.0)]}
    once, live = tmp_path / "once", tmp_path / "live"
    for folder in (once, live):
        write_scalars(folder, first)
    reader = EventScalars(live)
    kept = read_all(reader)
    assert reader.purged == {}
    restarted_writer(once, purge_step=5)
    restarted_writer(live, purge_step=5)
    wanted = tensorboards_view(once, ["loss", "lr"])
    assert wanted["loss"][0] == [0, 1, 2, 3, 4, *range(5, 13)] and wanted["lr"] == ([3], [2.0])  # (the case)
    assert read_all(EventScalars(once)) == wanted
    points, reset = reader.read()
    assert not reset and reader.purged == {"loss": 5, "lr": 5}
    tbe.drop_purged(kept, reader.purged)
    for tag, (steps, values) in points.items():
        kept[tag][0].extend(steps)
        kept[tag][1].extend(values)
    assert kept == wanted


def test_a_restarted_writer_without_purge_step_keeps_both_as_tensorboard_does(tmp_path):
    """Without purge_step a version-2 file says nothing of a restart, and TensorBoard keeps both stretches."""
    write_scalars(tmp_path, {"loss": [(s, 10.0 - s) for s in range(10)]})
    restarted_writer(tmp_path, purge_step=None)
    reader = EventScalars(tmp_path)
    assert read_all(reader) == tensorboards_view(tmp_path, ["loss"])
    assert reader.purged == {}


def test_an_old_files_step_going_back_drops_that_tags_later_points_as_tensorboard_does(tmp_path):
    """Event files before version 2 (TensorFlow 1) say nothing of restarts: TensorBoard drops a tag's points from
    a step that went back, that tag's only."""
    events = [event_pb2.Event(step=0, file_version="brain.Event:1")]
    for step, tags in [(s, ("loss", "acc")) for s in range(8)] + [(s, ("loss",)) for s in range(4, 10)]:
        value = [summary_pb2.Summary.Value(tag=tag, simple_value=step / 10 + len(tag)) for tag in tags]
        events.append(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=value)))
    (tmp_path / "events.out.tfevents.1.host").write_bytes(framed(*events))
    wanted = tensorboards_view(tmp_path, ["loss", "acc"])
    assert wanted["loss"][0] == [0, 1, 2, 3, *range(4, 10)] and wanted["acc"][0] == list(range(8))  # (the case)
    assert read_all(EventScalars(tmp_path)) == {tag: (s, [f32(v) for v in vs]) for tag, (s, vs) in wanted.items()}
