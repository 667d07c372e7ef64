"""``python -m model.experiment``: runs :mod:`model.cli.experiment`."""

import sys

from model.cli.experiment import main

if __name__ == "__main__":
    sys.exit(main())
