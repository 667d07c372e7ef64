"""``python -m model.explain``: runs :mod:`model.cli.explain`."""

from model.cli.explain import main

if __name__ == "__main__":
    raise SystemExit(main())
