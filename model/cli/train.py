"""Train a Transformer from the command line, without the window.

    python -m model.train --task grammar-en-zh --preset small --steps 3000 --out runs/grammar
    python -m model.train --arch decoder-only --task text-hsk-zh --preset small --steps 3000 --out runs/gpt
    python -m model.train --arch encoder-only --task text-hsk-zh --nsp --preset small --steps 3000 --out runs/bert
    python -m model.train --arch decoder-only --experts 4 --experts-top-k 1 --task text-grammar-en ...

Writes ``OUT/metrics.jsonl`` live (one JSON object per line: training steps with ``step``, ``time``,
``loss``, ``lr``, ``token_accuracy``, ``grad_norm``, ``tokens_per_s``, and with experts ``aux_loss``
and ``expert_load``; evaluations with ``split``, ``loss`` and ``exact_match``, ``bleu``
(encoder–decoder), ``perplexity`` (decoder-only), ``mlm_accuracy`` and ``nsp_accuracy`` (encoder-only),
``aux_loss`` and ``expert_load`` (Mixture-of-Experts)) and ``OUT/model.ckpt``, replaced
atomically every ``--save-every`` steps and at the end. ``--minutes M`` also stops the run after M
minutes of wall time. Ctrl-C saves and exits (status 130). ``--resume CKPT`` continues a run up to
``--steps`` updates in total; when CKPT is in OUT, the lines of ``OUT/metrics.jsonl`` past its step
(logged after the last save by a run that was killed) are dropped first. A run that diverges saves
the weights of the last step that was in range and exits with status 1: resume it with a lower rate.

A fresh run saves its step-0 checkpoint first. ``--probe SENTENCE --probe-every K`` records the sentence's
attention every K steps in ``OUT/probe/`` (for a window following the run: ``python main.py --follow OUT``).
A ``--data`` file of 64 MB or more (or any, with ``--stream``) is read as a stream (:mod:`model.data.stream`:
held-out pairs chosen by a hash of the line, tokenizers trained on ``--tokenizer-sample`` pairs, token ids
cached in ``OUT/data-cache``). Under ``torchrun --nproc_per_node N -m model.train …`` it trains with
DistributedDataParallel (:mod:`model.training.distributed`); only rank 0 writes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import IO

import torch

from model.cli.common import Progress, add_setting_flags, given_flags, given_settings
from model.core.config import PRESETS, ModelConfig
from model.data import FILE_FORMATS, TASKS, DataError, DataSpec
from model.data.stream import ProgressDetail, StreamedBatches
from model.data.tokenization import TOKENIZER_KINDS, TokenizerSpec
from model.families.registry import ENCODER_DECODER, FAMILIES, FamilySpec
from model.io.checkpoint import CheckpointError, write_atomically
from model.io.follow import ending_note, write_probe
from model.session import Session
from model.training import distributed
from model.training.device import DEVICE_CHOICES, ThreadGovernor, device_description
from model.training.trainer import TrainConfig, TrainingDiverged, train_config_for


def build_parser() -> argparse.ArgumentParser:
    """The flags: data, model (one per ModelConfig setting), tokenizer, and training (one per TrainConfig
    setting, besides those of the run itself)."""
    ap = argparse.ArgumentParser(
        prog="transformer-explorer-train",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    _add_data_flags(ap.add_argument_group("data (one of --task / --data)"))
    m = ap.add_argument_group("model", "Each flag overrides the preset's value.")
    m.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    add_setting_flags(m, ModelConfig)
    m.add_argument("--shared-vocab", action="store_true", help="one tokenizer and embedding for both sides")
    t = ap.add_argument_group("tokenizer")
    t.add_argument("--tokenizer", choices=TOKENIZER_KINDS, default="word")
    t.add_argument("--vocab-size", type=int, default=8000)
    t.add_argument("--min-frequency", type=int, default=1)
    o = ap.add_argument_group("training")
    o.add_argument("--steps", type=int, required=True, help="train until this many updates in total")
    o.add_argument("--minutes", type=float, help="also stop once this run has trained this long (wall time)")
    o.add_argument("--out", required=True, metavar="DIR", help="folder for metrics.jsonl and model.ckpt")
    o.add_argument("--resume", metavar="CKPT", help="continue the run saved in this checkpoint")
    o.add_argument("--device", choices=DEVICE_CHOICES, default="auto")
    o.add_argument("--threads", type=int, help="CPU threads for torch (default: the cores other programs leave free)")
    o.add_argument("--save-every", type=int, default=500)
    o.add_argument(
        "--probe",
        metavar="SENTENCE",
        help="record this sentence's attention over training in OUT/probe/ (for a window following the run)",
    )
    o.add_argument(
        "--probe-target",
        metavar="TEXT",
        help="the probe's target, teacher-forced (default: the model's own greedy output)",
    )
    o.add_argument("--probe-every", type=int, default=100, metavar="K", help="steps between probe snapshots")
    o.add_argument("--test", action="store_true", help="also evaluate on the test split at the end")
    o.add_argument(
        "--lean",
        action="store_true",
        help="leave the optimizer state out of the final checkpoint (a third of the size; "
        "training it further restarts Adam's moments)",
    )
    add_setting_flags(o, TrainConfig)
    return ap


def _add_data_flags(src: argparse._ArgumentGroup) -> None:
    src.add_argument("--task", choices=TASKS, help="a bundled task")
    src.add_argument(
        "--data",
        metavar="FILE",
        help="your own pairs: .tsv, .jsonl, or the source side of two files; "
        "for --arch decoder-only/encoder-only plain text, a sentence or document per line",
    )
    src.add_argument("--data-target", metavar="FILE", help="the target side, when --data is plain source text")
    src.add_argument("--format", choices=FILE_FORMATS, default="auto", help="format of --data (default: guess)")
    src.add_argument("--src-key", default="english", help="JSON lines: source field (default english)")
    src.add_argument("--tgt-key", default="chinese", help="JSON lines: target field (default chinese)")
    src.add_argument("--swap", action="store_true", help="translate the second column into the first")
    src.add_argument("--length", type=int, default=10, help="symbol tasks: longest sequence (default 10)")
    src.add_argument("--min-length", type=int, help="symbol tasks: shortest sequence (default: --length)")
    src.add_argument("--alphabet", type=int, default=10, help="symbol tasks: number of symbols (default 10)")
    src.add_argument("--n-train", type=int, help="generated tasks: training pairs (default 20000)")
    src.add_argument("--data-seed", type=int, default=0, help="seed of data generation and splits")
    src.add_argument(
        "--stream",
        action="store_true",
        help="read --data as a stream (automatic from 64 MB on): held-out pairs chosen by a hash of "
        "the line, the tokenizers trained on a sample, token ids cached in OUT/data-cache",
    )
    src.add_argument("--valid-size", type=int, default=0, help="streamed data: valid pairs (default 1000)")
    src.add_argument("--test-size", type=int, default=0, help="streamed data: test pairs (default 1000)")
    src.add_argument(
        "--tokenizer-sample",
        type=int,
        default=200_000,
        metavar="N",
        help="streamed data: training pairs the tokenizers learn from (default 200000)",
    )


def _data_spec(args: argparse.Namespace, family: FamilySpec) -> DataSpec:
    if (args.task is None) == (args.data is None):
        raise DataError("give exactly one of --task NAME or --data FILE")
    data = DataSpec(
        task=args.task,
        path=args.data,
        target_path=args.data_target,
        file_format=args.format,
        src_key=args.src_key,
        tgt_key=args.tgt_key,
        swap=args.swap,
        seed=args.data_seed,
        length=args.length,
        min_length=args.min_length or args.length,
        alphabet=args.alphabet,
        stream=args.stream,
        valid_size=args.valid_size,
        test_size=args.test_size,
        tokenizer_sample=args.tokenizer_sample,
        **({"n_train": args.n_train} if args.n_train else {}),
    )
    if args.data and args.format == "auto" and family.single_stream:
        data = replace(data, file_format="text")  # a single-stream model reads plain text, a line each
    return data


def make_session(args: argparse.Namespace) -> Session:
    if args.resume:
        fixed = sorted(given_flags(args, ModelConfig))
        if fixed:
            raise ValueError(
                f"--resume continues a saved model, whose architecture cannot change: drop {', '.join(fixed)}"
            )
        session = Session.load(args.resume, device=args.device)
        session.data_cache, session.data_progress = Path(args.out) / "data-cache", StreamPrinter()
        changes = given_settings(args, TrainConfig)
        if changes:  # e.g. a lower learning rate after a diverging run
            session.with_train_config(**changes)
            print(f"training settings changed on resume: {changes}", file=sys.stderr)
        if args.task is not None or args.data is not None:  # fine-tuning on other data
            session.with_data(_data_spec(args, session.model_cfg.family))
            print(f"training on {session.data_spec.name} from here on", file=sys.stderr)
        return session
    data = _data_spec(args, FAMILIES.get(args.arch, ENCODER_DECODER))  # without --arch: the paper's
    train = train_config_for(args.preset, **given_settings(args, TrainConfig))
    tokenizer = TokenizerSpec(args.tokenizer, args.vocab_size, args.min_frequency)
    return Session.create(
        data,
        args.preset,
        train,
        tokenizer,
        shared_tokenizer=args.shared_vocab,
        device=args.device,
        data_cache=Path(args.out) / "data-cache",
        progress=StreamPrinter(),
        **given_settings(args, ModelConfig),
    )


class StreamPrinter:
    """Says on stderr how reading a streamed file goes: a line now and then (in place on a terminal)."""

    def __init__(self) -> None:
        self.last, self.stage = 0.0, ""
        self.tty = sys.stderr.isatty()

    def __call__(self, stage: str, fraction: float | None, detail: ProgressDetail) -> None:
        now = time.monotonic()
        done = fraction is not None and fraction >= 1.0
        if stage == self.stage and not done and now - self.last < (0.25 if self.tty else 5.0):
            return
        self.last, self.stage = now, stage
        share = f" {100 * fraction:3.0f}%" if fraction is not None else ""
        line = f"{stage}{share}: {detail.text()}"
        sys.stderr.write(("\r" + line[:160].ljust(160) + ("\n" if done else "")) if self.tty else line + "\n")
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, _, world = distributed.world()
    if world == 1:
        return _run(args, argv, rank, world)
    args.device = distributed.start(args.device)  # torchrun: join the other ranks
    signal.signal(signal.SIGTERM, _interrupted)  # torchrun ends the others so when one rank fails: save first
    try:
        return _run(args, argv, rank, world)
    finally:
        distributed.stop()


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace, argv: list[str] | None, rank: int, world: int) -> int:
    out = Path(args.out)
    session = _session(args, rank, world)
    if session is None:
        return 2
    if rank != 0:  # only rank 0 writes: the log, the checkpoint and what is said on stderr
        with open(os.devnull, "w", encoding="utf-8") as log:
            return _train(session, args, log, None)
    _note_run(session, argv)
    out.mkdir(parents=True, exist_ok=True)
    try:
        _describe_run(session, args)
    except (DataError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    metrics, ckpt = out / "metrics.jsonl", out / "model.ckpt"
    try:
        _trim_own_log(session, args, metrics)
    except OSError as exc:
        print(f"error: {metrics} cannot be rewritten ({exc.strerror})", file=sys.stderr)
        return 2
    with open(metrics, "a" if args.resume else "w", encoding="utf-8") as log:
        status = _train(session, args, log, ckpt)
    if world > 1:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # torchrun ending the ranks must not cut the last save short
    session.notes["ended"] = ending_note(session.step, status)  # a window following the run says that it ended
    session.save(ckpt, include_optimizer=not args.lean)
    print(f"saved {ckpt} (step {session.step})", file=sys.stderr)
    corpus = session._corpus  # (None when the data was never read: nothing to add)
    if corpus is not None and corpus.stream is not None and corpus.report is not None and corpus.report.skipped:
        print(corpus.report.summary(), file=sys.stderr)  # bad lines found while streaming
    return status


def _session(args: argparse.Namespace, rank: int, world: int) -> Session | None:
    """The session to train; with several ranks, rank 0 makes it and the others load what it saved (the same
    tokenizers and weights everywhere). None after an error (said on stderr by rank 0)."""
    error, session = None, None
    if rank == 0:
        try:
            session = make_session(args)
            if not args.resume:  # step 0: for the other ranks to start from, and for a window following the run
                Path(args.out).mkdir(parents=True, exist_ok=True)
                session.save(Path(args.out) / "model.ckpt")
        except (DataError, CheckpointError, ValueError, OSError) as exc:
            error = str(exc)
            print(f"error: {exc}", file=sys.stderr)
    if world > 1:
        error = distributed.share(error)
        if error is None and rank != 0:
            if args.resume:
                session = make_session(args)
                session.data_progress = None  # rank 0 says how reading goes
            else:
                session = Session.load(Path(args.out) / "model.ckpt", device=args.device)
                session.data_cache = Path(args.out) / "data-cache"
    if session is None or error is not None:
        return None
    session.rank, session.world = rank, world
    return session


def _note_run(session: Session, argv: list[str] | None) -> None:
    """Record the command line and the data in the checkpoint's notes."""
    command = "python -m model.train " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    session.notes.pop("ended", None)  # resumed: running again
    session.notes.setdefault("commands", []).append(command)
    try:
        c = session.corpus
        session.notes["data"] = (
            f"{session.data_spec.name} (seed {session.data_spec.seed}): {c.n_train:,} train / {len(c.valid):,} "
            f"valid / {len(c.test):,} test pairs, {c.src_lang} → {c.tgt_lang}"
        )
    except (DataError, ValueError):
        pass


def _describe_run(session: Session, args: argparse.Namespace) -> None:
    """Say on stderr what is about to be trained, on what, and what was cut; raises DataError for bad data."""
    cfg = session.model_cfg
    layers = f"{cfg.n_layers} layers" if cfg.single_stream else f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers"
    experts = f", {cfg.n_experts} experts (top-{cfg.experts_top_k})" if cfg.moe else ""
    active = f" ({session.model.active_parameters():,} active per token)" if cfg.moe else ""
    print(
        f"{session.data_spec.name}: {cfg.arch.replace('_', '-')}, {session.model.num_parameters():,} parameters"
        f"{active} (d_model {cfg.d_model}, {cfg.n_heads} heads, {layers}{experts}) on "
        f"{device_description(session.device)}; steps {session.step} → {args.steps}",
        file=sys.stderr,
    )
    corpus = session.corpus
    what = f"texts ({corpus.src_lang})" if corpus.monolingual else f"pairs ({corpus.src_lang} → {corpus.tgt_lang})"
    streamed = f" (streamed; the tokenizers learnt from {len(corpus.train):,})" if corpus.stream else ""
    print(
        f"data: {corpus.n_train:,} training{streamed}, {len(corpus.valid):,} valid, {len(corpus.test):,} test {what}",
        file=sys.stderr,
    )
    if corpus.report is not None:
        print(corpus.report.summary(), file=sys.stderr)
    if corpus.stream is not None:
        return  # training pairs that are cut are counted as their chunks are read
    cut = session.encoded("train").truncated
    if cut:
        what = "texts" if corpus.monolingual else "pairs"
        print(f"{cut:,} training {what} are longer than max_len ({cfg.max_len}) and were cut", file=sys.stderr)


def _trim_own_log(session: Session, args: argparse.Namespace, metrics: Path) -> None:
    """On resuming into the checkpoint's own folder, drop the log lines past its step; raises OSError."""
    if not (args.resume and Path(args.resume).resolve().parent == metrics.parent.resolve()):
        return
    dropped = trim_metrics(metrics, session.step)
    if dropped:
        print(
            f"{metrics}: {dropped} lines past step {session.step} (written after the checkpoint was saved) dropped",
            file=sys.stderr,
        )


def _governor(args: argparse.Namespace, session: Session) -> ThreadGovernor | None:
    """Without --threads, one process on the CPU uses the cores other programs leave free (see ThreadGovernor);
    torchrun's ranks and a set OMP_NUM_THREADS keep the threads they were given."""
    given = args.threads or os.environ.get("OMP_NUM_THREADS") or distributed.world()[2] > 1
    return None if given or torch.device(session.device).type != "cpu" else ThreadGovernor()


def _train(session: Session, args: argparse.Namespace, log: IO[str], ckpt: Path | None) -> int:
    """Train up to ``args.steps``, logging to ``log`` and saving every ``--save-every`` (to ``ckpt``, on rank 0:
    the other ranks have None); → the exit status."""
    progress = Progress(args.steps, session.step) if ckpt is not None else Silent()
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else math.inf
    probing = bool(args.probe) and ckpt is not None
    governor = _governor(args, session)
    try:
        if probing:
            _probe(session, args, ckpt)
        while session.step < args.steps and time.monotonic() < deadline:
            if governor is not None:
                governor.apply()
            for done in session.train_steps(1):
                for record in [done.to_dict()] if done.evaluation is None else [done.to_dict(), done.evaluation]:
                    if not session.model_cfg.moe:  # a dense model has no experts to report on
                        record = {k: v for k, v in record.items() if k not in ("aux_loss", "expert_load")}
                    log.write(json.dumps(record) + "\n")
                    if "split" in record:
                        progress.update(session.step, "valid " + _scores(record, short=True), force=True)
            log.flush()
            r = session.history.train
            progress.update(
                session.step,
                f"loss {r['loss'][-1]:.3f} acc {r['token_accuracy'][-1]:.3f} lr {r['lr'][-1]:.2e} "
                f"{r['tokens_per_s'][-1] / 1000:.0f}k tok/s{_stream_position(session)}",
            )
            if args.save_every and session.step % args.save_every == 0 and ckpt is not None:
                session.save(ckpt)
            if probing and args.probe_every and session.step % args.probe_every == 0:
                _probe(session, args, ckpt)
        progress.close()
        if ckpt is not None:
            _final_evaluations(session, args, log)
    except KeyboardInterrupt:
        progress.close()
        print(f"interrupted at step {session.step}; saving", file=sys.stderr)
        return 130
    except TrainingDiverged as exc:
        progress.close()
        if ckpt is not None:  # every rank saw it (the check is over all ranks' losses); rank 0 says it
            print(f"error: {exc}", file=sys.stderr)
            rate = "--noam-factor" if session.train_cfg.schedule == "noam" else "--lr"
            print(
                f"to go on: python -m model.train --resume {shlex.quote(str(ckpt))} --out "
                f"{shlex.quote(str(ckpt.parent))} --steps {args.steps} {rate} <lower>",
                file=sys.stderr,
            )
        return 1
    except RuntimeError as exc:
        if session.world == 1:
            raise
        progress.close()  # a collective failed: another rank stopped or crashed
        if ckpt is not None:
            reason = re.sub(r"^\[[^\]]*\] ", "", str(exc).splitlines()[0]).split(". ")[0]  # gloo: "[file:line] why. …"
            print(f"error: another rank stopped ({reason}); saving step {session.step}", file=sys.stderr)
        return 1
    return 0


def _stream_position(session: Session) -> str:
    """Where a streamed file's training is: " epoch 0, chunk 12/641" (this rank's chunks); else ""."""
    stream = session.trainer.stream
    if not isinstance(stream, StreamedBatches):
        return ""
    return f" epoch {stream.epoch}, chunk {stream.chunk + 1}/{stream.per_rank}"


def _probe(session: Session, args: argparse.Namespace, ckpt: Path | None) -> None:
    """The probe sentence's attention now, into OUT/probe/ (see :mod:`model.io.follow`)."""
    assert ckpt is not None
    target = args.probe_target
    if target is None and session.model_cfg.single_stream:
        target = ""  # the text alone
    try:
        inspection = session.inspect(args.probe, target)
    except ValueError as exc:
        print(f"warning: the probe sentence cannot be recorded ({exc})", file=sys.stderr)
        args.probe = None
        return
    write_probe(ckpt.parent / "probe", inspection)


class Silent:
    """The progress bar of a rank that says nothing."""

    def update(self, step: int, text: str, force: bool = False) -> None:
        pass

    def close(self) -> None:
        pass


def _final_evaluations(session: Session, args: argparse.Namespace, log: IO[str]) -> None:
    n = session.train_cfg.eval_sentences  # decoding every sentence of a large split can take minutes
    for split in ("valid", "test")[: 2 if args.test else 1]:
        record = session.evaluate(split, n)
        log.write(json.dumps(record) + "\n")
        print(f"{record['split']}: {_scores(record)} ({record['sentences']} sentences)", file=sys.stderr)


def _scores(record: dict, short: bool = False) -> str:
    """An evaluation's figures, as each family is judged."""
    if "perplexity" in record:
        text = f"loss {record['loss']:.3f}, perplexity {record['perplexity']:.1f}"
    elif "mlm_accuracy" in record:
        text = f"loss {record['loss']:.3f}, masked-token accuracy {record['mlm_accuracy']:.3f}"
        if "nsp_accuracy" in record:
            text += f", next-sentence accuracy {record['nsp_accuracy']:.3f}"
    elif short:
        return f"EM {record['exact_match']:.3f} BLEU {record['bleu']:.1f}"
    else:
        text = f"loss {record['loss']:.3f}, exact match {record['exact_match']:.3f}, BLEU {record['bleu']:.1f}"
    if "expert_load" in record and not short:
        text += ", experts' load " + " ".join(f"{x:.2f}" for x in record["expert_load"])
    return text.replace(", ", " ") if short else text


def trim_metrics(path: Path, step: int) -> int:
    """Drop the lines of a metrics log about steps after ``step``, and a torn last line; → lines dropped.

    A run killed between two saves has logged steps that its checkpoint does not hold; resuming logs
    them again. The file is rewritten atomically, and only when something changes; lines that are not
    JSON records are kept as they are.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline; else a line whose writing was cut short
    kept, dropped = [], 0
    for n, line in enumerate(lines + ([tail] if tail else [])):
        try:
            record = json.loads(line)
        except ValueError:
            if n == len(lines):  # the unfinished tail: torn by the kill
                dropped += 1
            else:
                kept.append(line)
            continue
        past = isinstance(record, dict) and isinstance(record.get("step"), (int, float)) and record["step"] > step
        dropped += past
        if not past:
            kept.append(line)
    if dropped or tail:  # a kept tail needs its newline before more lines are appended
        write_atomically(path, lambda handle: handle.write(b"".join(line + b"\n" for line in kept)))
    return dropped


if __name__ == "__main__":
    sys.exit(main())
