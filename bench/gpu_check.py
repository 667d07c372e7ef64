"""Everything that needs a CUDA GPU, in one unattended command of under 5 minutes.

    python -m bench.gpu_check [--quick]

On a machine where PyTorch sees a CUDA GPU it:

1. runs the CUDA tests (``tests/scenarios/test_cuda.py``: the same numbers as on the CPU, bf16 training that
   learns, checkpoints and views coming back to the CPU);
2. measures the GPU's own bf16 matrix-product rate (8192³), as a ceiling measured in the same run;
3. times a training step of ours against ``torch.nn.Transformer`` at ``paper_base`` with bf16
   autocast (goal ≤ 1.0), prints tokens/s and the model FLOP utilisation (MFU) against the datasheet
   bf16 peak and against the measured matrix-product rate; the same for the small preset;
4. times greedy decoding with the key/value cache against recomputing the prefix;
5. trains the grammar task (small preset, as the window does) until ≥ 95% exact match on the
   held-out-combination test split, and says how long it took (at most 120 s of training);
6. trains 100 steps with the command-line trainer, and with ``torchrun --nproc_per_node <GPUs>`` (nccl),
   checking that rank 0 logged every step once, and prints the tokens/s of all ranks together.

Without CUDA it says so and exits 0. Each part is bounded in time; a part that fails is reported and
the others still run; the exit status is 1 if any part failed.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent

# Dense bf16 tensor-core peaks from the vendors' datasheets (no sparsity), by device-name fragment.
DATASHEET_BF16 = [("H200", 989.4e12), ("H100 PCIe", 756.0e12), ("H100", 989.4e12), ("A100", 312.0e12)]


def datasheet_peak(name: str) -> float | None:
    return next((peak for fragment, peak in DATASHEET_BF16 if fragment in name), None)


def section(title: str) -> None:
    print(f"\n######## {title}", flush=True)


def run_part(title: str, fn: Callable[[], None], failures: list[str]) -> None:
    section(title)
    t0 = time.perf_counter()
    try:
        fn()
    except Exception as exc:  # report and go on: one broken part must not hide the others' figures
        import traceback

        traceback.print_exc()
        failures.append(f"{title}: {type(exc).__name__}: {exc}")
    print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)


def describe_gpu() -> None:
    props = torch.cuda.get_device_properties(0)
    print(
        f"  {torch.cuda.device_count()} × {props.name}, {props.total_memory / 2**30:.0f} GiB, "
        f"{props.multi_processor_count} multiprocessors, compute capability {props.major}.{props.minor}"
    )
    print(f"  torch {torch.__version__}, CUDA {torch.version.cuda}, bf16 supported: {torch.cuda.is_bf16_supported()}")


def run_tests(timeout: float) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/scenarios/test_cuda.py"]
    result = subprocess.run(cmd, cwd=ROOT, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"the CUDA tests failed (pytest exit status {result.returncode})")


def matmul_rate(n: int = 8192, repeats: int = 10) -> float:
    """bf16 n×n×n matrix products per second × their FLOPs, on random data, timed with CUDA events."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        a @ b
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / repeats
    return 2 * n**3 / seconds


def train_step_figures(measured_peak: float | None, repeats: int) -> None:
    from bench.common import report
    from bench.train_step import RATIOS, compare, training_flops

    name = torch.cuda.get_device_name(0)
    sheet = datasheet_peak(name)
    for preset, batch, length, vocab in [("paper_base", 256, 64, 37000), ("small", 64, 20, 1000)]:
        med, cfg, n_params = compare(preset, "cuda", batch, length, vocab, repeats, bf16=True)
        print(
            f"  {preset}: d_model {cfg.d_model}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, "
            f"{n_params:,} parameters; batch {batch} × length {length}, vocabulary {vocab}, bf16 autocast, "
            f"dropout {cfg.dropout}"
        )
        report(f"training step, {preset}", med, RATIOS)
        seconds = med["ours (records attention on demand)"]
        tokens = 2 * batch * length
        achieved = training_flops(cfg, batch, length, length) / seconds
        print(
            f"  ours: {tokens / seconds:,.0f} tokens/s (source + target), {achieved / 1e12:.1f} TFLOP/s of model work"
        )
        if sheet:
            print(f"  MFU against the datasheet bf16 peak ({sheet / 1e12:.0f} TFLOP/s): {achieved / sheet:.1%}")
        if measured_peak:
            print(
                f"  MFU against the measured 8192³ product ({measured_peak / 1e12:.0f} TFLOP/s): "
                f"{achieved / measured_peak:.1%}"
            )


def decoding_figures(repeats: int) -> None:
    from bench.common import report
    from bench.decoding import TOKENS, compare

    for preset in ["small", "paper_base"]:
        med = compare(preset, "cuda", repeats)
        report(
            f"greedy decoding, {preset} preset, {TOKENS} tokens, source length 20",
            med,
            [
                ("cache speed-up", "greedy, recomputing the prefix", "greedy, cached"),
                ("beam 5 / greedy", "beam search, beam 5", "greedy, cached"),
            ],
        )
        print(f"  cached: {med['greedy, cached'] / TOKENS * 1e3:.2f} ms per token")


def grammar_to_goal(budget: float) -> None:
    from bench.learning import run

    reached = run("grammar", threads=4, device="cuda", budget=budget, every=5, stop_at_goal=True)
    if reached is None:
        raise RuntimeError(f"the grammar task did not reach 95% exact match in {budget:.0f} s of training")


def command_line_training(timeout: float) -> None:
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "model.cli.train",
            "--task",
            "copy",
            "--preset",
            "tiny",
            "--steps",
            "100",
            "--device",
            "cuda",
            "--eval-every",
            "50",
            "--out",
            out,
        ]
        _timed(cmd, timeout, "model.cli.train, 100 steps, one process")
        checkpoints = sorted(Path(out).glob("*.ckpt"))
        if not checkpoints:
            raise RuntimeError(f"model.cli.train wrote no checkpoint in {out}: {sorted(os.listdir(out))}")
        print(f"  wrote {', '.join(p.name for p in checkpoints)}")


def torchrun_training(timeout: float) -> None:
    """100 steps under ``torchrun --nproc_per_node <GPUs>`` (nccl): every step logged once, by rank 0."""
    import json

    gpus = torch.cuda.device_count()
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(gpus),
            "-m",
            "model.cli.train",
            "--task",
            "copy",
            "--preset",
            "tiny",
            "--steps",
            "100",
            "--device",
            "cuda",
            "--eval-every",
            "0",
            "--out",
            out,
        ]
        _timed(cmd, timeout, f"torchrun, {gpus} process(es), 100 steps")
        records = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
        steps = [r["step"] for r in records if "tokens_per_s" in r]
        if steps != list(range(1, 101)):
            raise RuntimeError(f"expected steps 1..100 logged once each, got {len(steps)} lines")
        rates = sorted(r["tokens_per_s"] for r in records if "tokens_per_s" in r and r["step"] > 10)
        print(f"  {gpus} rank(s): median {rates[len(rates) // 2]:,.0f} target tokens/s over all ranks")


def _timed(cmd: list[str], timeout: float, what: str) -> None:
    print("  $ " + " ".join(cmd[1:]), flush=True)
    t0 = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT, timeout=timeout, capture_output=True, text=True)
    tail = (result.stdout + result.stderr).strip().splitlines()[-8:]
    print("\n".join("    " + line for line in tail))
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed with exit status {result.returncode}")
    print(f"  {what}: {time.perf_counter() - t0:.1f} s including start-up")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and a shorter grammar budget")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(
            f"No CUDA GPU is visible to PyTorch {torch.__version__} (built for CUDA: {torch.version.cuda}); "
            "there is nothing for this check to do on this machine."
        )
        return 0
    faulthandler.dump_traceback_later(290, exit=True)  # bounded: never hang a lent machine
    os.chdir(ROOT)
    repeats = 5 if args.quick else 15
    failures: list[str] = []
    t0 = time.perf_counter()
    run_part("GPU", describe_gpu, failures)
    run_part("CUDA tests", lambda: run_tests(timeout=100), failures)
    measured: dict[str, float] = {}

    def measure_peak() -> None:
        measured["peak"] = matmul_rate()
        print(f"  {measured['peak'] / 1e12:.0f} TFLOP/s")

    run_part("bf16 matrix product, 8192³", measure_peak, failures)
    run_part(
        "training step, ours / nn.Transformer", lambda: train_step_figures(measured.get("peak"), repeats), failures
    )
    run_part("greedy decoding, cached / recomputed", lambda: decoding_figures(max(3, repeats // 3)), failures)
    run_part("grammar task to 95% exact match", lambda: grammar_to_goal(40 if args.quick else 120), failures)
    run_part("command-line training", lambda: command_line_training(timeout=60), failures)
    run_part("torchrun", lambda: torchrun_training(timeout=60), failures)
    faulthandler.cancel_dump_traceback_later()
    section(f"done in {time.perf_counter() - t0:.0f} s")
    for failure in failures:
        print(f"  FAILED {failure}")
    print("  all parts passed" if not failures else f"  {len(failures)} part(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
