"""Experiments: one part of the Transformer changed or broken, trained beside its baseline from the same start
(:mod:`model.experiments.paired`, which needs PyTorch), with what to expect said before the run
(:mod:`model.experiments.variants`, plain data: the window reads it at start-up without importing PyTorch)."""

from model.experiments.variants import VARIANTS, Variant, variant_named

__all__ = ["VARIANTS", "Variant", "variant_named"]
