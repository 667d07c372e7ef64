"""What each family learns from a batch, and how it is scored on held-out text.

- encoder–decoder: predict each target token from the source and the target before it (the paper);
- decoder-only: predict each next token of a text (a language model; perplexity = e^loss per token);
- encoder-only: predict the chosen (masked) tokens from both sides (BERT's masked LM), and with a head,
  whether sentence B follows sentence A (next-sentence prediction).

With Mixture-of-Experts layers, ``aux_loss_coef · aux`` (the load-balancing loss, the mean over the MoE layers:
1 when they are balanced) is added to what is minimised; the loss that is reported is the token loss alone, so
that dense and MoE curves compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from model.core.transformer import Extras, Transformer
from model.data.batching import Batch
from model.data.text_batching import IGNORE, EncodedTexts, LMBatch, MLMBatch, text_batches_in_order
from model.families.registry import scores

AnyBatch = Batch | LMBatch | MLMBatch


@dataclass
class Outcome:
    """One forward pass over a batch: what to minimise and what to report."""

    objective: Tensor  # token loss (+ NSP loss) + aux_loss_coef · aux: what backward() is called on
    loss: Tensor  # the token loss (label smoothing included), the number the curves show
    correct: Tensor  # predicted tokens equal to the targets (a count)
    counted: int  # targets that count (not padding; for MLM the chosen positions)
    aux: Tensor  # the load-balancing loss, mean over the MoE layers (1 at balance; 0 without experts)
    load: list[Tensor]  # per MoE layer, [N] share of assignments per expert
    nsp_correct: int = 0  # next-sentence predictions that were right
    nsp_total: int = 0
    plain_sum: float = 0.0  # with ``plain``: Σ −log P(target) over the counted targets, no label smoothing


def run_batch(
    model: Transformer, batch: AnyBatch, label_smoothing: float, plain: bool = False, forward: Any = None
) -> Outcome:
    """Forward ``batch`` through ``model`` with its family's objective (no backward); with ``plain`` also the
    summed cross-entropy without label smoothing (a perplexity's numerator), from the same logits. ``forward``:
    what to call instead of ``model`` (the model under DistributedDataParallel)."""
    call = forward if forward is not None else model
    nsp_loss, nsp_correct, nsp_total = None, 0, 0
    if isinstance(batch, Batch):
        logits, extras = call(batch.src, batch.tgt_in, return_extras=True)
        targets, ignore = batch.tgt_out, IGNORE
    elif isinstance(batch, LMBatch):
        logits, extras = call(batch.ids, return_extras=True)
        targets, ignore = batch.targets, IGNORE
    else:
        logits, extras = call(batch.ids, segments=batch.segments, return_extras=True)
        targets, ignore = batch.labels, IGNORE
        nsp_loss, nsp_correct, nsp_total = _nsp(extras, batch)
    logits = logits.float()
    counted = targets != ignore
    n = int(counted.sum())
    if n:
        loss = F.cross_entropy(
            logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=ignore, label_smoothing=label_smoothing
        )
    else:  # a small MLM batch may have no chosen position: nothing to learn from its tokens
        loss = logits.sum() * 0.0
    objective = loss if nsp_loss is None else loss + nsp_loss
    objective = objective + model.cfg.aux_loss_coef * extras.aux_loss
    with torch.no_grad():
        correct = (logits.argmax(-1) == targets)[counted].sum()
        plain_sum = 0.0
        if plain and n:
            flat = logits.view(-1, logits.shape[-1])
            plain_sum = float(F.cross_entropy(flat, targets.view(-1), ignore_index=ignore, reduction="sum"))
    return Outcome(
        objective, loss, correct, n, extras.aux_loss.detach(), extras.load, nsp_correct, nsp_total, plain_sum
    )


def _nsp(extras: Extras, batch: MLMBatch) -> tuple[Tensor | None, int, int]:
    if batch.nsp_labels is None or extras.cls_logits is None:
        return None, 0, 0
    cls_logits = extras.cls_logits.float()
    loss = F.cross_entropy(cls_logits, batch.nsp_labels)
    correct = int((cls_logits.argmax(-1) == batch.nsp_labels).sum())
    return loss, correct, len(batch.nsp_labels)


def mean_load(load: list[Tensor]) -> list[float]:
    """The share of tokens per expert, averaged over the MoE layers ([] without experts)."""
    if not load:
        return []
    return torch.stack([x.float() for x in load]).mean(0).tolist()


@torch.no_grad()
def evaluate_text(
    model: Transformer,
    data: EncodedTexts,
    kind: str,
    label_smoothing: float,
    batch_size: int = 64,
    **options,
) -> dict[str, float | list[float]]:
    """Scores of a single-stream model on held-out texts. ``kind`` "lm" (decoder-only): loss, perplexity
    (e^ of the plain cross-entropy per token) and token accuracy; "mlm" (encoder-only): loss and masked-token
    accuracy with the same masks every time (and next-sentence accuracy with NSP). With experts also the
    load-balancing loss and each expert's share of the tokens. ``options``: the masking options of
    :func:`~model.data.text_batching.text_batches_in_order`."""
    model.eval()
    device = model.device
    total = plain = correct = aux = 0.0
    counted = nsp_correct = nsp_total = batches = 0
    loads: list[list[float]] = []
    for batch in text_batches_in_order(data, batch_size, kind, **options):
        batch = batch.to(device)
        out = run_batch(model, batch, label_smoothing, plain=kind == "lm")
        total += float(out.loss) * out.counted
        plain += out.plain_sum
        correct += float(out.correct)
        counted += out.counted
        nsp_correct, nsp_total = nsp_correct + out.nsp_correct, nsp_total + out.nsp_total
        aux, batches = aux + float(out.aux), batches + 1
        if out.load:
            loads.append(mean_load(out.load))
    result: dict[str, float | list[float]] = {"loss": total / max(1, counted), "sentences": len(data.ids)}
    if kind == "lm":
        result["perplexity"] = math.exp(min(plain / max(1, counted), 700.0))
        result["token_accuracy"] = correct / max(1, counted)
    else:
        result["mlm_accuracy"] = correct / max(1, counted)
        if nsp_total:
            result["nsp_accuracy"] = nsp_correct / nsp_total
    if "aux_loss" in scores(model.cfg):  # with experts
        result["aux_loss"] = aux / max(1, batches)
        result["expert_load"] = torch.tensor(loads).mean(0).tolist() if loads else []
    return result
