"""The code stays walkable: no function in the window or the engine longer than a screen."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60


def test_no_function_is_longer_than_60_lines():
    long = []
    for path in sorted([*(ROOT / "explorer").rglob("*.py"), *(ROOT / "model").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "\n".join(long)
