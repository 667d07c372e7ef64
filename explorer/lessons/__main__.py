"""``python -m explorer.lessons --check FILE…``: check lesson files; exits 1 and lists the problems of each one that
cannot be run from first slide to last (without FILE: the bundled lessons)."""

from __future__ import annotations

import argparse
import sys

from explorer.lessons import bundled_lessons
from explorer.lessons.lesson import check_lesson


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m explorer.lessons", description=__doc__.splitlines()[0])
    ap.add_argument("--check", nargs="*", metavar="FILE", required=True, help="lesson files (none: the bundled ones)")
    args = ap.parse_args(argv)
    files = args.check or [str(p) for p in bundled_lessons()]
    failed = 0
    for name in files:
        problems = check_lesson(name)
        if problems:
            failed += 1
            print(f"{name}: {len(problems)} problem{'s' if len(problems) > 1 else ''}")
            for problem in problems:
                print(f"  - {problem}")
        else:
            print(f"{name}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
