"""``python -m model.evaluate``: runs :mod:`model.cli.evaluate`."""

from model.cli.evaluate import main

if __name__ == "__main__":
    main()
