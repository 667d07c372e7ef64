"""Training: its settings (``config``), the trainer, the device and its threads, and torch.distributed."""
