"""``python -m model.translate``: runs :mod:`model.cli.translate`."""

from model.cli.translate import main

if __name__ == "__main__":
    main()
