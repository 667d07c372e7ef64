"""The engine's handlers for whole models: make a new one, open a checkpoint or a model folder, save, and, as the
window closes, stop and keep unsaved work in an autosave file; and installing a model as the run every panel shows
(a made, opened or followed one)."""

from __future__ import annotations

import gc
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.answers import IDLE, EngineMessage, LoadProgress
from explorer.commands import Load, NewModel, Save
from explorer.engine_base import EngineBase
from explorer.engine_loading import LIVE_ENGINES, prepare_optimizers_aside
from explorer.failures import NOT_SAVED, RefusedRequest
from model.training.device import without_collector_pauses

if TYPE_CHECKING:
    from model.session import Session


def data_cache_dir() -> Path:
    """Where the window keeps what it learnt of big data files read as streams (their scans, their token ids)."""
    from PySide6.QtCore import QStandardPaths

    return Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.CacheLocation)) / "data-cache"


class FileHandlers(EngineBase):
    """New, open, save and the autosave at shutdown (engine thread)."""

    def _install(self, session: Session, path: str | None, origin: int = 0) -> None:
        session.data_cache = session.data_cache or data_cache_dir()
        self._flush_metrics(force=True)  # the old run's last steps belong to the old run
        # the model, its data and tokenizers live long: keep them out of the collector's full walks, which
        # a fast-training model triggers often and which hold the GIL (the window's too) while they walk
        gc.freeze()
        if self._pair is not None and not self._in_pair(session):
            self._run_id = max(self._run_id, *self._pair_ids.values())  # (a new id after the baseline's too)
            self._pair, self._pair_ids = None, {}  # another model: the experiment is over
        self.session, self._path = session, path
        self._run_id += 1
        self._state = IDLE
        self._decoder = self._lanes = None
        self._ablation = ()  # the heads switched off were the old model's
        self._probe_step = -1
        self.run_described.emit(replace(self._run_info(session), origin=origin))
        self._publish_status()
        # after the first screen (the panels' requests for the new model come first):
        self._later = [self._describe_data, self._first_probe, prepare_optimizers_aside]

    def _new(self, c: NewModel) -> None:
        if c.if_no_model and self.session is not None:
            return  # the program's own start-up plan: the person's model came first
        spec = c.spec  # (the old model trains on if the new one cannot be made; _install makes the engine idle)
        from model.session import Session

        report = self._data_progress(c.request_id, spec.data)
        with without_collector_pauses():  # the corpus, tokenizers and weights live as long as the run
            session = Session.create(
                spec.data,
                spec.preset,
                spec.train,
                spec.tokenizer,
                spec.shared_tokenizer,
                self._device.type,
                data_cache=data_cache_dir(),
                progress=report,
                **spec.model_overrides,
            )
        self._install(session, path=None, origin=c.request_id)
        self._first_probe()  # a new model has its corpus in memory already: the timeline starts at step 0

    def _load(self, c: Load) -> None:
        """Open a checkpoint: a person's file (it becomes the file Save writes), an autosave or the
        bundled model (neither of which Save may overwrite)."""
        if c.if_no_model and self.session is not None:
            return  # the program's own start-up plan: the person's model came first
        path, kind = c.path, c.kind
        from model.session import Session

        name = Path(path).name

        def report(stage: str, fraction: float) -> None:  # called on this thread while a model folder is read
            self.load_progressed.emit(LoadProgress(c.request_id, name, stage, fraction))

        session = Session.load(path, device=self._device.type, progress=report)  # raises before anything changes
        # restored work is not yet saved anywhere the person chose: dirty from the first status on
        session.dirty = kind == "autosave"
        self._install(session, path=path if kind == "file" else None, origin=c.request_id)

    def _save(self, c: Save) -> None:
        s = self._need_session()
        path = c.path
        try:
            s.save(path)
        except OSError as exc:
            why = str(exc.strerror or exc)
            raise RefusedRequest(EngineMessage(NOT_SAVED, (("path", str(path)), ("why", why)))) from exc
        self._path = path
        self._publish_status()  # first, so the window's state is current when "saved" arrives
        self.saved.emit(c.request_id, path)

    def _do_shutdown(self, autosave: str | None) -> None:
        """Stop; unsaved work goes to ``autosave`` (never over an autosave nobody has answered for)."""
        self._state = IDLE
        s = self.session
        if s is not None:
            s.pause_clock()
            self._flush_metrics(force=True)
            if autosave and s.dirty:
                path = Path(autosave)
                if path.exists():
                    path = path.with_name(f"{path.stem}-{time.strftime('%Y%m%d-%H%M%S')}{path.suffix}")
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    s.save(path)
                except OSError as exc:  # the window is closing: say it where it can still be read
                    print(f"Transformer Explorer: could not write the autosave file {path}: {exc}", file=sys.stderr)
        LIVE_ENGINES.discard(self)
