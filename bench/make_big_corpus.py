"""Write a big English–Chinese pair file by recombining the teaching grammar, for the streaming figures.

    python -m bench.make_big_corpus 1024 /tmp/big.jsonl     # about 1 GB of JSON lines (translation2019zh's keys)
    python -m bench.make_big_corpus 200 /tmp/big.tsv        # about 200 MB of tab-separated pairs

Each line joins one to four grammar sentences (drawn with a fixed seed) into one pair, so the lines are
long and varied like a real corpus and the file is the same on every machine. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from model.data.grammar import generate_grammar


def write_corpus(size_mb: float, out: Path, seed: int = 0) -> tuple[int, int]:
    """Write about ``size_mb`` megabytes of pairs to ``out`` (.jsonl or .tsv); → (lines, bytes)."""
    splits = generate_grammar(20000, 0, 0, seed=seed)
    en = [s.en for s in splits.train]
    zh = [s.zh for s in splits.train]
    rng = np.random.default_rng(seed)
    jsonl = out.suffix.lower() in (".jsonl", ".json")
    target, written, lines = int(size_mb * 1e6), 0, 0
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        while written < target:
            counts = rng.integers(1, 5, size=4096)
            picks = rng.integers(0, len(en), size=int(counts.sum()))
            block, k = [], 0
            for c in counts:
                idx = picks[k : k + c]
                k += c
                e, z = " ".join(en[i] for i in idx), "".join(zh[i] for i in idx)
                block.append(json.dumps({"english": e, "chinese": z}, ensure_ascii=False) if jsonl else f"{e}\t{z}")
            text = "\n".join(block) + "\n"
            f.write(text)
            written += len(text.encode("utf-8"))
            lines += len(block)
    return lines, written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size_mb", type=float, help="about this many megabytes")
    ap.add_argument("out", type=Path, help=".jsonl (translation2019zh's keys) or .tsv")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    lines, size = write_corpus(args.size_mb, args.out, args.seed)
    print(f"{args.out}: {lines:,} pairs, {size / 1e6:,.0f} MB in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
