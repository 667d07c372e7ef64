"""Get a model from the Hugging Face Hub into its cache: only the files this program reads.

    python -m model.download Helsinki-NLP/opus-mt-en-zh
    python -m model.translate --checkpoint "$(python -m model.download Helsinki-NLP/opus-mt-en-zh)" "Hello!"

Progress goes to stderr; the folder (which --checkpoint and the window open) is the last line on stdout.
HF_ENDPOINT, HF_HOME / HF_HUB_CACHE, HF_TOKEN and HF_HUB_OFFLINE=1 work as for huggingface_hub. Without
network, a model already in the cache is used. Exit status: 0 fetched (or cached), 1 not, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import threading

from model.hf.download import DownloadError, DownloadProgress, cached_models, download


def _size(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _report(p: DownloadProgress) -> None:
    left = f", {p.seconds_left:,.0f} s left" if p.seconds_left is not None else ""
    rate = f"{p.rate / 1e6:,.1f} MB/s" if p.rate else "starting"
    print(f"\r{p.file}: {_size(p.done)} of {_size(p.total)} ({rate}{left})   ", end="", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="transformer-explorer-download", description=__doc__.split("\n\n")[0])
    ap.add_argument("model_id", nargs="?", help="a Hub id, such as Helsinki-NLP/opus-mt-en-zh or gpt2")
    ap.add_argument("--cached", action="store_true", help="list the models in the cache that open here, and stop")
    args = ap.parse_args(argv)
    if args.cached or not args.model_id:
        for m in cached_models():
            print(f"{m.repo_id}\t{_size(m.size)}\t{m.folder}")
        return 0
    cancel = threading.Event()
    try:
        folder = download(args.model_id, progress=_report, cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        print("\ninterrupted; the files finished stay in the cache", file=sys.stderr)
        return 130
    except DownloadError as exc:
        print(f"\n{exc}", file=sys.stderr)
        return 1
    print(file=sys.stderr)
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
