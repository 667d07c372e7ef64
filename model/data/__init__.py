"""Tasks, corpora, user files and batching.

Batching (which needs PyTorch) is imported on first use, so that the window can read the tasks and
check a data file before the engine has loaded PyTorch."""

from typing import TYPE_CHECKING, Any

from model.data.corpus import (
    MONOLINGUAL_TASKS,
    TASK_DESCRIPTIONS,
    TASKS,
    Corpus,
    DataSpec,
    is_monolingual,
    load_corpus,
)
from model.data.errors import DataError
from model.data.files import FILE_FORMATS, LoadReport, load_pairs_file, load_text_file

if TYPE_CHECKING:
    from model.data.batching import (
        IGNORE,
        Batch,
        BatchStream,
        EncodedPairs,
        Specials,
        batches_in_order,
        collate,
        encode_pairs,
    )
    from model.data.text_batching import (
        EncodedTexts,
        LMBatch,
        MLMBatch,
        TextStream,
        collate_lm,
        encode_texts,
        mask_tokens,
        nsp_examples,
        text_batches_in_order,
    )

_BATCHING = {
    "IGNORE",
    "Specials",
    "Batch",
    "BatchStream",
    "EncodedPairs",
    "batches_in_order",
    "collate",
    "encode_pairs",
}
_TEXT_BATCHING = {
    "EncodedTexts",
    "LMBatch",
    "MLMBatch",
    "TextStream",
    "collate_lm",
    "encode_texts",
    "mask_tokens",
    "nsp_examples",
    "text_batches_in_order",
}


def __getattr__(name: str) -> Any:
    if name in _BATCHING:
        from model.data import batching

        return getattr(batching, name)
    if name in _TEXT_BATCHING:
        from model.data import text_batching

        return getattr(text_batching, name)
    raise AttributeError(f"module 'model.data' has no attribute {name!r}")


__all__ = [
    "FILE_FORMATS",
    "IGNORE",
    "Specials",
    "MONOLINGUAL_TASKS",
    "TASKS",
    "TASK_DESCRIPTIONS",
    "Batch",
    "BatchStream",
    "Corpus",
    "DataError",
    "DataSpec",
    "EncodedPairs",
    "EncodedTexts",
    "LMBatch",
    "LoadReport",
    "MLMBatch",
    "TextStream",
    "batches_in_order",
    "collate",
    "collate_lm",
    "encode_pairs",
    "encode_texts",
    "is_monolingual",
    "load_corpus",
    "load_pairs_file",
    "load_text_file",
    "mask_tokens",
    "nsp_examples",
    "text_batches_in_order",
]
