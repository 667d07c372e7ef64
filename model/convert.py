"""``python -m model.convert``: runs :mod:`model.cli.convert`."""

from model.cli.convert import main

if __name__ == "__main__":
    main()
