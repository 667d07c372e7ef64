"""``python -m model.train``: runs :mod:`model.cli.train`."""

from model.cli.train import main

if __name__ == "__main__":
    main()
