"""Explain what a trained checkpoint says: how much each input token contributed to each output token.

    python -m model.explain --checkpoint resources/models/grammar-en-zh-small.ckpt "I read a book yesterday."
    python -m model.explain --checkpoint runs/gpt/model.ckpt "我昨天" --method gradient_x_input --csv why.csv
    python -m model.explain --checkpoint runs/bert/model.ckpt "我昨天在<mask>看书。" --lens
    python -m model.explain --checkpoint model.ckpt "I read a book." --target "我看了一本书。" --contrast 本
    python -m model.explain --checkpoint model.ckpt "I read a book." --ablate cross:0:1 cross:1:3

Prints the attribution matrix on stdout: one row per output token (a translator's output, a GPT's continuation,
a BERT's masks), one column per source token, then, after a bar, one per output token read before it; with
``--csv`` it also writes the matrix as CSV. ``--lens`` adds the logit lens: each layer's top guess at each
position, ``*`` where the final answer comes to the top and stays. ``--ablate`` switches heads off (kind
encoder, decoder or cross; layer and head counted from 0) for everything the tool computes.
"""

from __future__ import annotations

import argparse
import csv
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

from model.cli.common import add_checkpoint_flag, add_device_flags
from model.interpret.results import ATTRIBUTION_METHODS, HEAD_KINDS, Attribution, Head, LogitLens

METHOD_WORDS = {
    "integrated_gradients": "integrated gradients",
    "gradient_x_input": "gradient × input",
    "attention_rollout": "attention rollout",
}


def head_spec(text: str) -> Head:
    """``KIND:LAYER:HEAD`` (e.g. ``cross:0:1``) → ``("cross", 0, 1)``; ValueError naming the form otherwise."""
    parts = text.split(":")
    if len(parts) != 3 or parts[0] not in HEAD_KINDS or not all(p.isdigit() for p in parts[1:]):
        raise ValueError(
            f"--ablate {text!r} is not KIND:LAYER:HEAD (kind {', '.join(HEAD_KINDS)}; layer and head counted from 0, "
            "e.g. cross:0:1)"
        )
    return parts[0], int(parts[1]), int(parts[2])


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="transformer-explorer-explain", description=__doc__.split("\n\n")[0])
    add_checkpoint_flag(ap)
    ap.add_argument("--method", choices=ATTRIBUTION_METHODS, default="integrated_gradients")
    ap.add_argument("--csv", metavar="OUT", help="also write the matrix to this CSV file")
    ap.add_argument("--target", metavar="TEXT", help="the output to explain (default: the model's own greedy one)")
    ap.add_argument("--contrast", metavar="TOKEN", help="the last row explains log P(target) − log P(TOKEN)")
    ap.add_argument("--steps", type=int, default=64, help="integration steps of integrated gradients (default 64)")
    ap.add_argument("--lens", action="store_true", help="also print the logit lens: each layer's top guess")
    ap.add_argument(
        "--ablate",
        nargs="+",
        action="extend",
        default=[],
        metavar="KIND:LAYER:HEAD",
        help="heads switched off (zero ablation), e.g. cross:0:1 decoder:2:3 (the sentence before them, or -- after)",
    )
    add_device_flags(ap)
    ap.add_argument("sentence", help="the input: a source sentence, a prompt, or a text with <mask>")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    try:
        heads = [head_spec(text) for text in args.ablate]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    session = open_any_checkpoint(args)
    if session is None:
        return 2
    try:
        with session.ablated(heads):
            found = session.attribute(args.sentence, args.method, args.target, args.contrast, args.steps)
            lens = session.logit_lens(args.sentence, args.target) if args.lens else None
    except ValueError as exc:  # no <mask>, a head the model lacks, an unknown contrast token, nothing to explain
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if heads:
        print("heads switched off: " + ", ".join(f"{k}:{layer}:{h}" for k, layer, h in heads))
    print(describe(found))
    print(attribution_table(found))
    if found.logprob is not None and found.baseline_logprob is not None:
        gap = abs(found.total() - (found.logprob - found.baseline_logprob)).max()
        print(f"completeness: each row's sum is within {gap:.4f} of log P − log P at the zero baseline")
    if lens is not None:
        print()
        print(lens_table(lens, session.tgt_tok.display_token))
    if args.csv:
        try:
            write_csv(found, args.csv)
        except OSError as exc:
            print(f"error: cannot write {args.csv}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0


def open_any_checkpoint(args: argparse.Namespace) -> Any:
    """The checkpoint or folder ``args.checkpoint`` on ``args.device``, of any family; else None, with the reason
    on stderr."""
    import torch

    from model.io.checkpoint import CheckpointError
    from model.session import Session

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        return Session.load(args.checkpoint, device=args.device)
    except (CheckpointError, ValueError) as exc:  # ValueError: e.g. --device cuda without a GPU
        print(f"error: {exc}", file=sys.stderr)
        return None


def describe(found: Attribution) -> str:
    """One line: what the matrix holds."""
    method = METHOD_WORDS[found.method]
    if found.method == "integrated_gradients":
        method += f" ({found.steps} steps)"
    what = "log P(output token)" if found.method != "attention_rollout" else "attention rolled out"
    line = f"{method}: {what}, per row; columns: the input"
    if prefix_columns(found):
        line += " │ the output read before"
    if found.contrast is not None:
        line += f"; last row: log P({found.target_tokens[-1]}) − log P({found.contrast})"
    return line + f" (step {found.step})"


def prefix_columns(found: Attribution) -> int:
    """How many prefix columns are real: a BERT has none, a GPT one fewer than its targets."""
    labels = list(found.prefix_tokens)
    while labels and labels[-1] == "":
        labels.pop()
    return len(labels)


def matrix(found: Attribution) -> tuple[list[str], list[str], list[list[float]]]:
    """Column labels (source, then prefix), row labels and the values of each row."""
    n = prefix_columns(found)
    columns = [*found.source_tokens, *found.prefix_tokens[:n]]
    values = [[*map(float, s), *map(float, p[:n])] for s, p in zip(found.scores, found.prefix_scores)]
    return columns, list(found.target_tokens), values


def attribution_table(found: Attribution, decimals: int = 3) -> str:
    """The matrix as aligned text: a row per target token, a bar between the source and the prefix columns."""
    columns, rows, values = matrix(found)
    if found.contrast is not None:
        rows[-1] = f"{rows[-1]} vs {found.contrast}"
    n = len(found.source_tokens)
    cells = [["", *columns]]
    for t, (label, row) in enumerate(zip(rows, values)):
        unread = [c >= n + t and v == 0.0 for c, v in enumerate(row)]  # the output not yet read: left blank
        cells.append([label, *("" if blank else f"{v:.{decimals}f}" for v, blank in zip(row, unread))])
    return aligned(cells, bar_after=1 + len(found.source_tokens) if prefix_columns(found) else None)


def lens_table(lens: LogitLens, show: Any) -> str:
    """Layers × positions: each layer's top token and its probability; ``*`` marks the layer from which the
    model's final answer is on top at that position and stays there."""
    top = lens.probs.argmax(-1)  # [L, T]
    first = lens.first_layer()
    cells = [["read →", *lens.positions]]
    for layer in range(lens.probs.shape[0]):
        row = [f"layer {layer + 1}"]
        for t in range(top.shape[1]):
            mark = "*" if layer == first[t] else ""
            row.append(f"{show(int(top[layer, t]))} {lens.probs[layer, t, top[layer, t]]:.2f}{mark}")
        cells.append(row)
    cells.append(["output", *lens.targets])
    legend = (
        "logit lens: each layer's top token (and its probability) at each position; * the final answer first on top"
    )
    return legend + "\n" + aligned(cells)


def write_csv(found: Attribution, path: str) -> None:
    """Header: ``target`` then the column tokens; a row per target token, the full float values."""
    columns, rows, values = matrix(found)
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["target", *columns])
        for label, row in zip(rows, values):
            out.writerow([label, *(repr(v) for v in row)])


def width(text: str) -> int:
    """Columns a terminal gives ``text``: wide (CJK) characters two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def aligned(cells: Sequence[Sequence[str]], bar_after: int | None = None) -> str:
    """Rows of cells as text: the first column left-aligned, the others right-aligned, by display width."""
    widths = [max(width(row[c]) for row in cells) for c in range(len(cells[0]))]
    lines = []
    for row in cells:
        parts = []
        for c, (cell, w) in enumerate(zip(row, widths)):
            pad = " " * (w - width(cell))
            parts.append(cell + pad if c == 0 else pad + cell)
            if bar_after is not None and c == bar_after - 1:
                parts.append("│")
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
