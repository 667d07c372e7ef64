"""Symbol tasks: copy, reverse and sort random sequences (the Annotated Transformer's warm-up).

Symbols are the numbers 0 … alphabet−1 written as words ("3 7 1 …"). Valid and
test sequences never occur in the training set.
"""

from __future__ import annotations

import random

SYMBOL_TASKS = ("copy", "reverse", "sort")


def transform(task: str, symbols: list[int]) -> list[int]:
    if task == "copy":
        return list(symbols)
    if task == "reverse":
        return symbols[::-1]
    if task == "sort":
        return sorted(symbols)
    raise ValueError(f"unknown symbol task {task!r}")


def generate_symbol_task(
    task: str,
    n_train: int,
    n_valid: int,
    n_test: int,
    length: int,
    min_length: int,
    alphabet: int,
    seed: int,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]:
    """(train, valid, test) pairs of space-separated symbol strings, held-out sequences disjoint."""
    if not 1 <= min_length <= length:
        raise ValueError(f"need 1 ≤ min_length ≤ length (got {min_length}, {length})")
    if alphabet < 2:
        raise ValueError(f"the alphabet needs at least 2 symbols (got {alphabet})")
    possible = sum(alphabet**n for n in range(min_length, length + 1))
    wanted = n_train + n_valid + n_test
    if wanted > possible // 2:
        raise ValueError(
            f"only {possible} distinct sequences exist for length {min_length}–{length} over {alphabet} symbols; "
            f"ask for far fewer than {wanted} or use longer sequences / more symbols"
        )
    rng = random.Random(seed)
    seen: set[tuple[int, ...]] = set()

    def draw(n: int) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        while len(pairs) < n:
            seq = tuple(rng.randrange(alphabet) for _ in range(rng.randint(min_length, length)))
            if seq not in seen:
                seen.add(seq)
                pairs.append((" ".join(map(str, seq)), " ".join(map(str, transform(task, list(seq))))))
        return pairs

    valid, test = draw(n_valid), draw(n_test)  # held-out first; training never repeats them
    return draw(n_train), valid, test
