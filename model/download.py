"""``python -m model.download``: runs :mod:`model.cli.download`."""

import sys

from model.cli.download import main

if __name__ == "__main__":
    sys.exit(main())
