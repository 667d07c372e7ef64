"""``python -m model.fill_mask``: runs :mod:`model.cli.fill_mask`."""

from model.cli.fill_mask import main

if __name__ == "__main__":
    main()
