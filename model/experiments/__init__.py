"""Experiments: one part of the Transformer changed or broken, trained beside its baseline from the same start
(:mod:`model.experiments.paired`), with what to expect said before the run (:mod:`model.experiments.variants`)."""

from model.experiments.paired import PairedRun, share_initial_weights
from model.experiments.variants import VARIANTS, Variant, variant_named

__all__ = ["VARIANTS", "PairedRun", "Variant", "share_initial_weights", "variant_named"]
