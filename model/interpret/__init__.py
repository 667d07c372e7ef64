"""Asking a model *why*: attribution of each output token to its inputs, the logit lens, head ablation and head
importance, and scores of the functions heads are known to learn."""
