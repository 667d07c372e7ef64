"""The command-line tools (``python -m model.train`` etc. run these)."""
