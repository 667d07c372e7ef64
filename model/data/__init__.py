"""Tasks, corpora, user files and batching."""

from model.data.batching import Batch, BatchStream, EncodedPairs, batches_in_order, collate, encode_pairs
from model.data.corpus import TASK_DESCRIPTIONS, TASKS, Corpus, DataSpec, load_corpus
from model.data.errors import DataError
from model.data.files import FILE_FORMATS, LoadReport, load_pairs_file

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
