"""Asking a session's model why: attribution, the logit lens, head ablation and head importance
(:mod:`model.interpret`), on what each family reads — a translator's source and output prefix, a GPT's prompt
and continuation, a BERT's sentence and its masks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch

from model.decoding.search import generate, greedy_decode
from model.interpret import ablation, attribution, lens
from model.interpret.results import ATTRIBUTION_METHODS, Attribution, Head, HeadImportance, LogitLens
from model.session.data import SessionData
from model.session.inspection import SessionInspection

Target = str | Sequence[int] | None


class SessionInterpret(SessionData, SessionInspection):
    """Attribution, the logit lens and head ablation for one input of a session's model."""

    # -- what is explained -------------------------------------------------------------------------------------
    def readout(self, source: str, target: Target = None, contrast: str | int | None = None) -> attribution.Readout:
        """The teacher-forced pass that explains ``source`` → ``target`` (the model's own output when None; for
        a BERT, the predictions at the masks, or the ids given for them)."""
        decoding = self.model_cfg.family.decoding
        model, cfg = self.model, self.model_cfg
        never = tuple(cfg.never_emitted)
        if "fill_mask" in decoding:
            return self._masked_readout(source, target, never, self._contrast_id(contrast))
        _, ids, _ = self._source(source)
        if "generate" in decoding:
            y = self._continuation(ids, target)
            seq = [cfg.bos_id, *ids, *y[:-1]]
            rows = tuple(range(len(ids), len(ids) + len(y)))
            x = torch.tensor([seq], device=self.device)
            n = len(ids) + 1
            prefix = (0, range(n, n + len(y) - 1))
            return attribution.Readout(
                (x,), (model.tgt_embed,), rows, tuple(y), (0, range(n)), prefix, never, self._contrast_id(contrast)
            )
        y = self._translation(ids, target)
        src = torch.tensor([ids], device=self.device)
        tgt_in = torch.tensor([[cfg.bos_id, *y[:-1]]], device=self.device)
        return attribution.Readout(
            (src, tgt_in),
            (model.src_embed, model.tgt_embed),
            tuple(range(len(y))),
            tuple(y),
            (0, range(len(ids))),
            (1, range(len(y))),
            never,
            self._contrast_id(contrast),
        )

    def _translation(self, ids: list[int], target: Target) -> list[int]:
        """The output explained: the greedy translation or the text given, EOS last; or the ids given, as they are
        (a decoding's prefix up to its current step)."""
        cfg = self.model_cfg
        if target is not None and not isinstance(target, str):
            y = list(target)[: cfg.max_len]
            if not y:
                raise ValueError("There is no output token to explain yet: take a decoding step first.")
            return y
        if target is None:
            with torch.inference_mode():
                src = torch.tensor([ids], device=self.device)
                y = greedy_decode(self.model, src, self.default_max_len(len(ids)))[0]
        else:
            y = self.tgt_tok.encode_ids(target)
        return [*[t for t in y if t != cfg.eos_id][: cfg.max_len - 1], cfg.eos_id]

    def _continuation(self, ids: list[int], target: Target) -> list[int]:
        """A GPT's continuation explained: given (text or ids), or its own greedy one (at least one token)."""
        if target is None:
            with torch.inference_mode():
                y = generate(self.model, ids, self.default_max_len(len(ids)))
        else:
            y = self.tgt_tok.encode_ids(target) if isinstance(target, str) else list(target)
        room = self.model_cfg.max_len - 1 - len(ids)
        if not y or room < 1:
            raise ValueError("There is no continuation to explain: give a shorter prompt or a target.")
        return y[:room]

    def _masked_readout(
        self, text: str, target: Target, never: tuple[int, ...], contrast: int | None
    ) -> attribution.Readout:
        ids, _ = self._masked_input(text, ())
        masks = [p for p, i in enumerate(ids) if i == self.src_tok.mask_id]
        if not masks:
            raise ValueError("Write <mask> where the model should fill a word in: its guess is what is explained.")
        x = torch.tensor([ids], device=self.device)
        if target is None:
            with torch.inference_mode():
                logits = self.model(x)[0].float()
                logits[:, list(never)] = float("-inf")
                y = [int(logits[p].argmax()) for p in masks]
        else:
            y = self.src_tok.encode_ids(target) if isinstance(target, str) else list(target)
            if len(y) != len(masks):
                raise ValueError(f"{len(masks)} mask(s) to explain but {len(y)} target token(s) given")
        return attribution.Readout(
            (x,), (self.model.src_embed,), tuple(masks), tuple(y), (0, range(len(ids))), None, never, contrast
        )

    def _contrast_id(self, contrast: str | int | None) -> int | None:
        if contrast is None or isinstance(contrast, int):
            return contrast
        ids = self.tgt_tok.encode_ids(contrast)
        if not ids:
            raise ValueError(f"{contrast!r} is no token of this model's vocabulary")
        return ids[0]

    # -- attribution ---------------------------------------------------------------------------------------------
    def attribute(
        self,
        source: str,
        method: str = "integrated_gradients",
        target: Target = None,
        contrast: str | int | None = None,
        steps: int = 64,
        refine: bool = True,
        rows: Sequence[int] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Attribution:
        """How much each source token (and each token of the output read before) contributed to each target token
        (:class:`~model.interpret.results.Attribution`); ``contrast``: a token Y, and the last target's row
        explains log P(X) − log P(Y). Integrated gradients use ``steps`` Gauss–Legendre points (Captum's own rule);
        with ``refine`` a row that does not add up within 1% is integrated again, adaptively
        (:func:`~model.interpret.attribution.integrated_gradients`). ``rows``: integrated gradients of these
        targets only (the others' rows stay zero; a target's row never depends on the targets after it).
        ``progress(done, total)``: integrated gradients' points of the path, after each batch (raise to stop)."""
        if method not in ATTRIBUTION_METHODS:
            raise ValueError(f"unknown attribution method {method!r}; one of {', '.join(ATTRIBUTION_METHODS)}")
        if steps < 1:
            raise ValueError("integrated gradients need at least one step")
        readout = self.readout(source, target, contrast)
        self.model.eval()
        logprob = baseline = None
        if method == "integrated_gradients":
            scores, prefix, logprob, baseline = attribution.integrated_gradients(
                self.model, readout, steps, rows, refine, progress
            )
        elif method == "gradient_x_input":
            scores, prefix, _ = attribution.gradient_x_input(self.model, readout)
        else:
            scores, prefix = self._rollout(readout)
        return self._attribution(source, method, readout, scores, prefix, logprob, baseline, steps)

    def _rollout(self, readout: attribution.Readout) -> tuple[np.ndarray, np.ndarray]:
        maps = attribution.attention_maps(self.model, readout)
        rows = list(readout.rows)
        if readout.prefix is None:  # a BERT: its one stack
            rolled = attribution.rollout(attribution.layers_of(maps.encoder))
            return rolled[rows][:, list(readout.source[1])], np.zeros((len(rows), 0))
        if readout.prefix[0] == readout.source[0]:  # a GPT: prompt and continuation in one causal stack
            rolled = attribution.rollout(attribution.layers_of(maps.decoder_self))
            return rolled[rows][:, list(readout.source[1])], rolled[rows][:, list(readout.prefix[1])]
        source, own = attribution.encoder_decoder_rollout(
            attribution.layers_of(maps.encoder),
            attribution.layers_of(maps.decoder_self),
            attribution.layers_of(maps.cross),
        )
        return source[rows], own[rows][:, list(readout.prefix[1])]

    def _attribution(
        self,
        source: str,
        method: str,
        readout: attribution.Readout,
        scores: np.ndarray,
        prefix: np.ndarray,
        logprob: np.ndarray | None,
        baseline: np.ndarray | None,
        steps: int,
    ) -> Attribution:
        T = len(readout.targets)
        full_prefix = np.zeros((T, T))
        full_prefix[:, : prefix.shape[1]] = prefix
        show_src = self.src_tok.display_token
        show = self.tgt_tok.display_token
        src_ids = readout.inputs[readout.source[0]][0].tolist()
        prefix_ids: list[int] = []
        if readout.prefix is not None:
            prefix_ids = [readout.inputs[readout.prefix[0]][0].tolist()[p] for p in readout.prefix[1]]
        if readout.prefix is not None and readout.prefix[0] == readout.source[0]:  # a GPT: label the continuation
            prefix_ids = list(readout.targets)
        return Attribution(
            method=method,
            source=source,
            source_tokens=tuple(show_src(src_ids[p]) for p in readout.source[1]),
            target_tokens=tuple(show(t) for t in readout.targets),
            prefix_tokens=tuple(show(t) for t in prefix_ids) + ("",) * (T - len(prefix_ids)),
            scores=scores.astype(np.float32),
            prefix_scores=full_prefix.astype(np.float32),
            logprob=None if logprob is None else logprob.astype(np.float32),
            baseline_logprob=None if baseline is None else baseline.astype(np.float32),
            contrast=None if readout.contrast is None else show(readout.contrast),
            step=self.step,
            steps=steps if method == "integrated_gradients" else 0,
        )

    # -- the logit lens ------------------------------------------------------------------------------------------
    def logit_lens(self, source: str, target: Target = None) -> LogitLens:
        """What each layer of the decoder stack (a GPT's or BERT's one stack) would predict at each position."""
        readout = self.readout(source, target)
        self.model.eval()
        probs = lens.layer_probs(self.model, readout.inputs, list(readout.rows), readout.never)
        show = self.tgt_tok.display_token
        read = readout.inputs[-1][0].tolist()
        return LogitLens(
            source=source,
            positions=tuple(show(read[r]) for r in readout.rows),
            targets=tuple(show(t) for t in readout.targets),
            target_ids=tuple(readout.targets),
            probs=probs,
            step=self.step,
        )

    # -- heads switched off --------------------------------------------------------------------------------------
    @contextmanager
    def ablated(self, heads: Iterable[Head], mode: str = "zero", sentences: int = 100) -> Iterator[None]:
        """Inside, every computation of this session's model runs with ``heads`` — ``(kind, layer, head)``, kind
        "encoder", "decoder" or "cross", 0-based — switched off: their outputs zeroed before W^O (``mode="mean"``:
        replaced by their mean over ``sentences`` held-out sentences, computed once for these weights)."""
        heads = list(heads)
        means = self._head_means(sentences) if mode == "mean" and heads else None
        with ablation.ablated(self.model, heads, mode, means):
            yield

    def _head_means(self, sentences: int) -> ablation.Means:
        """The heads' mean outputs, kept while the weights stay (every view of a mean ablation asks for them)."""
        key = (self.step, sentences)
        kept = self._means_kept
        if kept is None or kept[0] != key:
            kept = self._means_kept = (key, ablation.head_means(self.model, self._held_out(sentences)))
        return kept[1]

    def head_importance(
        self,
        n_sentences: int = 100,
        metric: str = "loss",
        mode: str = "zero",
        progress: Callable[[int, int], bool] | None = None,
    ) -> HeadImportance:
        """Ablate each head in turn on ``n_sentences`` held-out sentences: Δloss and Δ token accuracy per head
        (Michel et al. 2019). ``progress(done, total)`` is called after each head; returning False cancels (the
        heads not reached stay NaN)."""
        if metric not in ("loss", "accuracy"):
            raise ValueError(f"unknown metric {metric!r}; loss or accuracy")
        batches = self._held_out(n_sentences)
        self.model.eval()
        return ablation.head_importance(self.model, batches, metric, mode, progress, self.step)

    def _held_out(self, n: int) -> list:
        """Evaluation batches of the first ``n`` sentences of the valid split (the train split when it is empty)."""
        data = self.encoded("valid")
        if not len(getattr(data, "src", getattr(data, "ids", []))):
            data = self.encoded("train")
        return ablation.first_batches(
            data, n, self.text_kind if self.model_cfg.single_stream else "", self.text_options()
        )
