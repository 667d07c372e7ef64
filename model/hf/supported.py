"""Which Hugging Face models this engine opens, asked of a ``config.json`` without PyTorch (the window and the
downloader check a repository before its weights are fetched)."""

from __future__ import annotations

from typing import Any

SUPPORTED = {
    "marian": ("MarianMTModel",),
    "gpt2": ("GPT2LMHeadModel", "GPT2Model"),
    "bert": ("BertForMaskedLM", "BertForPreTraining"),
}
SUPPORTED_TEXT = (
    "Marian translation models (opus-mt-*: MarianMTModel), GPT-2 (GPT2LMHeadModel) and BERT (BertForMaskedLM)"
)


def unsupported(config: dict[str, Any]) -> str | None:
    """Why a model with this ``config.json`` does not open here (a sentence), or None when it does. The values'
    kinds are checked here only as far as the answer needs them; opening the folder checks every value."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        return f"its config.json has no model_type this program knows; this program opens {SUPPORTED_TEXT}."
    if model_type not in SUPPORTED:
        return f"model_type {model_type!r} is not supported; this program opens {SUPPORTED_TEXT}."
    architectures = config.get("architectures") or [SUPPORTED[model_type][0]]
    if not (isinstance(architectures, list) and all(isinstance(a, str) for a in architectures)):
        return "its config.json's architectures is not a list of class names such as ['GPT2LMHeadModel']."
    if not any(a in SUPPORTED[model_type] for a in architectures):
        return (
            f"architecture {', '.join(map(str, architectures))} is not supported for {model_type}; "
            f"this program opens {', '.join(SUPPORTED[model_type])} (a model with its language-model head)."
        )
    return None
