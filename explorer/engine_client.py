"""The window's side of the engine: panels send their own commands through it and hear the answers.

The route of every request: a panel makes a command (:mod:`explorer.commands`) and calls
:meth:`EngineClient.ask` (or :meth:`EngineClient.send`); the engine thread (:class:`explorer.worker.Engine`)
dispatches it on its type to the handler of its concern (training, views of the model, files, following: the
``explorer/engine_*.py`` modules), which asks the model (:class:`model.session.Session`); the answer
(:mod:`explorer.answers`) comes back on the engine's typed signal, which the panel connected to itself, carrying the
request's id.

One freshness rule, here: of everything a panel asks to see (an inspection, an explanation, the
positional tables, a decoding step), only the answer to the newest request of its kind is shown; an
older answer still on its way is dropped (:meth:`EngineClient.fresh`). A decoding step asked for
before the person typed a new sentence, or before their next click, is such an older answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.commands import Command

if TYPE_CHECKING:
    from explorer.worker import Engine


class EngineClient:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._latest: dict[type[Command], int] = {}

    def send(self, command: Command) -> int:
        """Queue a command whose answers all count (a control, a decoding step); returns its id."""
        return self.engine.submit(command)

    def ask(self, command: Command) -> int:
        """Queue a request for a view of the model; an answer to an earlier one of its kind is now stale."""
        request_id = self.engine.submit(command)
        self._latest[type(command)] = request_id
        return request_id

    def fresh(self, kind: type[Command], request_id: int) -> bool:
        """True for the answer to the newest request of its kind."""
        return request_id >= self._latest.get(kind, 0)
