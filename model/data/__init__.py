"""Tasks, corpora, user files and batching.

Batching (which needs PyTorch) is imported on first use, so that the window can read the tasks and
check a data file before the engine has loaded PyTorch."""

from typing import TYPE_CHECKING, Any

from model.data.corpus import TASK_DESCRIPTIONS, TASKS, Corpus, DataSpec, load_corpus
from model.data.errors import DataError
from model.data.files import FILE_FORMATS, LoadReport, load_pairs_file

if TYPE_CHECKING:
    from model.data.batching import Batch, BatchStream, EncodedPairs, batches_in_order, collate, encode_pairs

_BATCHING = {"Batch", "BatchStream", "EncodedPairs", "batches_in_order", "collate", "encode_pairs"}


def __getattr__(name: str) -> Any:
    if name in _BATCHING:
        from model.data import batching

        return getattr(batching, name)
    raise AttributeError(f"module 'model.data' has no attribute {name!r}")


__all__ = [
    "FILE_FORMATS",
    "TASKS",
    "TASK_DESCRIPTIONS",
    "Batch",
    "BatchStream",
    "Corpus",
    "DataError",
    "DataSpec",
    "EncodedPairs",
    "LoadReport",
    "batches_in_order",
    "collate",
    "encode_pairs",
    "load_corpus",
    "load_pairs_file",
]
