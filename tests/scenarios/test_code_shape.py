"""The code stays walkable: no function longer than a screen, no class longer than a few, no import circle,
the formatter lays out the code, and what differs between the families lives with the families."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 60
MAX_CLASS_LINES = 400
MAX_FMT_SKIPS = 40
PACKAGES = ("model", "explorer")


def _sources(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in _sources(*PACKAGES)]


def test_no_function_is_longer_than_60_lines():
    long = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "\n".join(long)


def test_no_class_is_longer_than_400_lines():
    long = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "\n".join(long)


def test_formatter_markers_stay_few():
    """``# fmt: skip`` only where a table is laid out by hand."""
    files = [*_sources(*PACKAGES, "bench", "tests"), *(ROOT / "docs").glob("*.py")]
    count = sum(len(re.findall(r"#\s*fmt:\s*(skip|off)", p.read_text(encoding="utf-8"))) for p in files)
    assert count <= MAX_FMT_SKIPS, f"{count} formatter markers"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Which of the project's modules each imports (at module level, in functions, and for type checking)."""
    modules = {_module_name(p): p for p in _sources(*PACKAGES)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and modules[target].name != "__init__.py":
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    """No module of the engine or the window imports one that imports it back, even only for type checking
    or inside a function (package ``__init__`` re-exports aside)."""
    assert not circles(import_graph())


FAMILY_IDS = {"encoder_decoder", "decoder_only", "encoder_only"}
FAMILY_HOMES = ("model/families/",)


def _is_family_value(node: ast.AST) -> bool:
    """``x.arch``, ``arch``, a family's id, or a tuple/list/set of them."""
    if isinstance(node, ast.Attribute) and node.attr == "arch":
        return True
    if isinstance(node, ast.Name) and node.id == "arch":
        return True
    if isinstance(node, ast.Constant) and node.value in FAMILY_IDS:
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_family_value(e) for e in node.elts)
    return False


def family_tests(tree: ast.AST) -> list[int]:
    """Lines that ask which family a model is (compare its ``arch`` or a family's id, or look a family's id up
    in a table) instead of asking the family's spec."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_is_family_value(n) for n in (node.left, *node.comparators)):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in FAMILY_IDS
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Dict) and any(_is_family_value(k) for k in node.keys if k is not None):
            lines.append(node.lineno)  # a table of the families: it belongs in their specs
    return sorted(set(lines))


def test_family_tests_are_found():
    found = family_tests(
        ast.parse('if cfg.arch == "decoder_only":\n    x = TEXTS["encoder_only"]\nT = {"encoder_only": 1}')
    )
    assert found == [1, 2, 3]
    assert family_tests(ast.parse("spec = family_of(cfg)\nif 'generate' in spec.decoding:\n    pass\n")) == []


def test_only_the_families_ask_which_family_a_model_is():
    """What differs between the families is asked of their spec (model/families/registry.py); only the
    registry and the family modules compare family ids."""
    found = []
    for path, tree in _trees():
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(FAMILY_HOMES):
            found += [f"{rel}:{line}" for line in family_tests(tree)]
    assert not found, f"{len(found)} family tests outside model/families/:\n" + "\n".join(found)


def _test_names(path: Path) -> set[str]:
    """The names a test file for the module at ``path`` may have (after ``test_``): the module's own name, the name
    with its package's in front (``hf_folders``, ``bench_families``), and ``X_panel`` for a panel."""
    if path.stem == "__init__":
        return {path.parent.name}
    names = {path.stem, f"{path.parent.name}_{path.stem}"}
    if path.parent.name == "panels":
        names.add(f"{path.stem}_panel")
    return names


def test_every_test_file_is_named_after_what_it_tests():
    """``tests/test_X.py`` tests the module (or package) X; a suite that follows a person across modules (a
    classroom, hostile files, the screens) lives in ``tests/scenarios/``."""
    named = set().union(*(_test_names(p) for p in _sources(*PACKAGES, "bench")))
    stray = [p.name for p in sorted((ROOT / "tests").glob("test_*.py")) if p.stem.removeprefix("test_") not in named]
    assert not stray, f"named after no module of model/, explorer/ or bench/ (move to tests/scenarios/?): {stray}"


TEXT_TABLES = ("i18n_zh", "help")  # translations and help: text, checked by the tests of the texts


def test_every_module_of_some_size_has_its_test_file():
    """A module of ``model/`` or ``explorer/`` over 100 lines has a test file named after it or after its package
    (the tables of texts aside: the first-launch and help tests check every one of their entries)."""
    tests = {p.stem.removeprefix("test_") for p in (ROOT / "tests").glob("test_*.py")}
    missing = [
        str(p.relative_to(ROOT))
        for p in _sources("model", "explorer")
        if len(p.read_text(encoding="utf-8").splitlines()) > 100
        and not p.stem.startswith(TEXT_TABLES)
        and not (_test_names(p) | {p.parent.name}) & tests
    ]
    assert not missing, f"no tests/test_<module>.py: {missing}"
