"""``python -m model.generate``: runs :mod:`model.cli.generate`."""

from model.cli.generate import main

if __name__ == "__main__":
    main()
