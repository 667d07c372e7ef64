"""What a person reads when the engine cannot do what was asked: named on the engine thread, worded by the window.

The engine thread turns an error into an :class:`~explorer.answers.EngineMessage` (:func:`failure_message`): the
project's own errors as they are worded, a refusal it can name by a message id, anything else named with what became
of the work. It never translates: the window's thread does, as it passes the message on (:func:`failure_text`).
"""

from __future__ import annotations

import sys
import traceback

from explorer.answers import EngineMessage
from explorer.i18n import N_, tr
from model.decoding.stepping import DecodeError
from model.training.config import TrainingDiverged

# What a DecodeError's code means, in words a person can act on (the engine names the problem, the window says it)
DECODE_ERRORS = {
    "no_sentence": N_("Type a sentence and press Enter to start decoding."),
}
NO_LANES = N_("Press “Decode in lanes” first: there are no lanes to step yet.")
NO_MODEL = N_("There is no model yet: choose a task and press Start, or open a checkpoint.")
NOT_SAVED = N_("{path} could not be saved ({why}); choose another folder or name, and save again.")
TRAINING_STOPPED = N_("{error} Training is paused and nothing was lost; Resume continues.")
UNEXPECTED_IN_TRAINING = N_(
    "Unexpected error: {error}. Training is paused and nothing was lost; you can save your work."
)
UNEXPECTED_IN_REQUEST = N_(
    "Unexpected error: {error}. This request was not carried out; training and your work are as they were."
)


class RefusedRequest(ValueError):
    """A request the engine will not carry out, for a reason a person can act on, named by a message id (the
    exception's own text is the English, for a developer reading a log)."""

    def __init__(self, message: EngineMessage) -> None:
        super().__init__(message.worded())
        self.message = message


def named(error: Exception) -> EngineMessage:
    """A refused request in words a person can act on: a message id where the engine has one, else the error's own
    words."""
    if isinstance(error, RefusedRequest):
        return error.message
    if isinstance(error, DecodeError) and error.code in DECODE_ERRORS:
        return EngineMessage(DECODE_ERRORS[error.code])
    return EngineMessage.as_is(str(error))


def failure_message(error: Exception, training: bool) -> EngineMessage:
    """The project's own errors as they are worded; anything else named, with what became of the work (engine thread).
    The traceback goes to the standard error stream, for a developer, never into the window."""
    if isinstance(error, TrainingDiverged) or (isinstance(error, (ValueError, OSError)) and not training):
        return named(error)
    if isinstance(error, (ValueError, OSError)):  # training stopped on a problem it names (a data file gone…)
        said = error.message if isinstance(error, RefusedRequest) else EngineMessage.as_is(str(error))
        return EngineMessage(TRAINING_STOPPED, (("error", said),))
    traceback.print_exception(error, file=sys.stderr)
    text = UNEXPECTED_IN_TRAINING if training else UNEXPECTED_IN_REQUEST
    return EngineMessage(text, (("error", f"{type(error).__name__}: {error}"),))


def failure_text(message: EngineMessage) -> str:
    """The message in the interface language (the window's thread)."""
    return message.worded(tr)


def decode_error_message(error: Exception) -> str:
    """What a person reads about a request the engine refused: a DecodeError in the interface language, any
    other error as the engine worded it."""
    return failure_text(named(error))
