"""Files: checkpoints, following a training run's folder, probe snapshots, and opening only safe regular files."""
