"""Architectural and platform guards."""

import subprocess
import sys
import textwrap

QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph")


def test_model_package_imports_no_qt():
    code = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        import model
        for info in pkgutil.walk_packages(model.__path__, "model."):
            if info.name.split(".")[-1] in ("train", "translate", "__main__"):
                continue  # command-line entry points run on import
            importlib.import_module(info.name)
        leaked = sorted(m for m in sys.modules if m.split(".")[0] in {QT_MODULES!r})
        print(",".join(leaked))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"model imported Qt modules: {out.stdout}"


def test_pyside_survives_many_none_returning_calls():
    """PySide6 6.12.0 on CPython 3.11 drops a reference to None on every Qt call that
    returns None and aborts after ~20,000 calls (Fatal Python error: none_dealloc).
    The dependency pin must keep such a build out."""
    code = textwrap.dedent(
        """
        import os
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from PySide6.QtWidgets import QApplication, QWidget
        app = QApplication([])
        w = QWidget()
        for _ in range(60000):
            w.setObjectName("x")
        print("survived")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "survived" in out.stdout, out.stderr[-2000:]


def test_ci_runs_the_readme_test_command():
    """CI must run exactly the test command the README gives a newcomer."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in readme.splitlines() if "pytest" in line and line.strip().startswith("python")]
    assert commands, "README.md gives no test command"
    assert commands[0] in ci.splitlines(), f"{commands[0]!r} is not a line of .ci/run"
