"""Make a training loop of your own followable in Transformer Explorer (``main.py --follow DIR``).

A few lines in the loop::

    from model.follow import RunWriter

    w = RunWriter("runs/mine", tokenizer=tokenizer)
    for step in range(1, steps + 1):
        ...
        w.log(step, loss=loss.item(), lr=scheduler.get_last_lr()[0])
        if step % 100 == 0:
            w.checkpoint(model, step)

:meth:`RunWriter.log` appends a line to ``DIR/metrics.jsonl``: ``loss``, ``lr`` (or ``learning_rate``),
``grad_norm`` and ``token_accuracy`` are drawn in the training plots, ``eval_loss`` as an evaluation, and any
other number as a curve under its own name. :meth:`RunWriter.checkpoint` saves a Hugging Face model (Marian,
GPT-2, BERT: anything with ``save_pretrained``) as ``DIR/checkpoint-N/``, shaped like a ``Trainer``'s checkpoint,
or a :class:`model.session.Session` as ``DIR/model.ckpt``; each appears whole (written aside, then renamed), and
only the newest ``keep`` checkpoint folders stay. The window reads them as they come: the model every panel
shows becomes the newest one, and the probe sentence's attention is computed on each for the timeline.
docs/following-runs.md has a complete example.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from model.io.trainer_folder import CHECKPOINT, STATE


class RunWriter:
    """Writes a run's log and checkpoints into ``folder`` the way ``--follow`` reads them."""

    def __init__(self, folder: str | Path, tokenizer: Any = None, keep: int = 2) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1 (checkpoint folders kept), not {keep}")
        self.folder, self.tokenizer, self.keep = Path(folder), tokenizer, keep
        self.folder.mkdir(parents=True, exist_ok=True)
        self._log = open(self.folder / "metrics.jsonl", "a", encoding="utf-8")  # noqa: SIM115 — open while logging

    def log(self, step: int, **numbers: Any) -> None:
        """One line of the log: the numbers at ``step`` (floats, ints, or one-element tensors)."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be a whole number ≥ 0, not {step!r}")
        line: dict[str, Any] = {"step": step}
        for name, value in numbers.items():
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"{name}={value!r} is not a number; log numbers only") from None
            line[name] = number  # a diverged loss is written NaN, as Python's json (and this project's trainer) does
        self._log.write(json.dumps(line) + "\n")
        self._log.flush()

    def checkpoint(self, model: Any, step: int, tokenizer: Any = None) -> Path:
        """Save ``model``'s weights after ``step`` updates; → where. A Hugging Face model becomes
        ``checkpoint-<step>/`` (with the tokenizer given here or to the writer, which the window needs to read
        text); a Session becomes ``model.ckpt``."""
        from model.session import Session

        if isinstance(model, Session):
            model.step = step
            model.save(self.folder / "model.ckpt")  # atomic
            return self.folder / "model.ckpt"
        if not hasattr(model, "save_pretrained"):
            raise TypeError(
                f"{type(model).__name__} cannot be saved for following: give a Hugging Face model (one with "
                "save_pretrained: Marian, GPT-2, BERT) or a model.session.Session"
            )
        tokenizer = tokenizer if tokenizer is not None else self.tokenizer
        final = self.folder / f"checkpoint-{step}"
        aside = self.folder / f".checkpoint-{step}.tmp"
        shutil.rmtree(aside, ignore_errors=True)
        model.save_pretrained(aside)
        if tokenizer is not None:
            tokenizer.save_pretrained(aside)
        state = {"global_step": step, "log_history": [], "written_by": "model.follow.RunWriter"}
        (aside / STATE).write_text(json.dumps(state), encoding="utf-8")  # as a Trainer's: the checkpoint is whole
        if final.exists():
            shutil.rmtree(final)
        os.replace(aside, final)
        self._thin()
        return final

    def _thin(self) -> None:
        """Keep the newest ``keep`` checkpoint folders (as a Trainer's save_total_limit does)."""
        found = sorted(
            (int(m.group(1)), p) for p in self.folder.iterdir() if (m := CHECKPOINT.fullmatch(p.name)) and p.is_dir()
        )
        for _, old in found[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)

    def close(self) -> None:
        self._log.close()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
