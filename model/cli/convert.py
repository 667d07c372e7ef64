"""Convert a Hugging Face model folder (Marian opus-mt, GPT-2, BERT) into a checkpoint of this project.

python -m model.convert opus-mt-en-zh/ opus-mt-en-zh.ckpt

The checkpoint holds the configuration, both tokenizers and the weights; it then trains, resumes, translates
(or generates, or fills masks) like any checkpoint made here, and opens in the window.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="transformer-explorer-convert", description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a model folder (huggingface-cli download NAME --local-dir DIR, or save_pretrained)")
    ap.add_argument("out", help="the checkpoint to write (.ckpt)")
    args = ap.parse_args(argv)
    folder, out = Path(args.folder), Path(args.out)
    if not folder.is_dir():
        print(
            f"error: {folder} is not a folder; give the folder that holds config.json and the weights", file=sys.stderr
        )
        return 2
    if out.is_dir():
        print(f"error: {out} is a folder; give the name of the checkpoint file to write", file=sys.stderr)
        return 2
    from model.io.checkpoint import CheckpointError
    from model.session import Session

    try:
        session = Session.load(folder, device="cpu", progress=lambda what, done: print(f"{what}…", file=sys.stderr))
        session.save(out, include_optimizer=False)
    except (CheckpointError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cfg, origin = session.model_cfg, session.notes.get("origin", {})
    size = out.stat().st_size / 2**20
    print(
        f"{out}: {origin.get('model_type')} {origin.get('name')} — {cfg.family.name}, "
        f"{session.model.num_parameters():,} parameters, {size:.0f} MiB; use it with {cfg.family.cli}, "
        f"model.cli.train --resume, or open it in the window"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
