"""packaging/make_archive.py: the release archives, made from a small fake PyInstaller build. (Here, not in
tests/: the naming rule of test_code_shape looks for modules in model/, explorer/ and bench/ only.)"""

import importlib.util
import shlex
import stat
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# loaded by path: a folder named packaging/ cannot be imported past the PyPI package of that name
_spec = importlib.util.spec_from_file_location("make_archive", ROOT / "packaging" / "make_archive.py")
assert _spec is not None and _spec.loader is not None
make_archive = importlib.util.module_from_spec(_spec)
sys.modules["make_archive"] = make_archive
_spec.loader.exec_module(make_archive)

APP = "transformer-explorer"


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    """A PyInstaller-like dist folder: the executable, a library and a symlink to it, a data file."""
    app = tmp_path / "dist" / APP
    (app / "_internal" / "resources").mkdir(parents=True)
    exe = app / APP
    exe.write_bytes(b"\x7fELF fake")
    exe.chmod(0o755)
    (app / "_internal" / "libfake.so.1").write_bytes(b"lib")
    (app / "_internal" / "libfake.so").symlink_to("libfake.so.1")
    (app / "_internal" / "resources" / "model.ckpt").write_bytes(b"weights")
    return tmp_path / "dist"


def test_tarball_holds_the_folder_the_entry_the_icon_and_the_note(dist, tmp_path):
    path = make_archive.make_archive(dist, tmp_path / "out", "1.2.3", "linux", "x86_64")
    assert path.name == "transformer-explorer-1.2.3-linux-x86_64.tar.gz"
    with tarfile.open(path) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {
            APP,
            f"{APP}/{APP}",
            f"{APP}/_internal",
            f"{APP}/_internal/libfake.so.1",
            f"{APP}/_internal/libfake.so",
            f"{APP}/_internal/resources",
            f"{APP}/_internal/resources/model.ckpt",
            f"{APP}/{APP}.desktop",
            f"{APP}/{APP}.png",
            f"{APP}/INSTALL.txt",
        }
        exe = members[f"{APP}/{APP}"]
        assert exe.mode & stat.S_IXUSR and exe.mode & stat.S_IXOTH, oct(exe.mode)
        assert members[f"{APP}/_internal/libfake.so"].issym()
        assert members[f"{APP}/_internal/libfake.so"].linkname == "libfake.so.1"
        assert not members[f"{APP}/{APP}.desktop"].mode & stat.S_IXUSR
        assert all(m.uid == 0 and m.uname == "root" for m in members.values())
        note = tar.extractfile(f"{APP}/INSTALL.txt").read().decode()  # type: ignore[union-attr]
        icon = tar.extractfile(f"{APP}/{APP}.png").read()  # type: ignore[union-attr]
    assert icon.startswith(b"\x89PNG")
    assert "1.2.3" in note and "./transformer-explorer --install-desktop-entry" in note
    assert f"sudo tar -C /opt -xzf {path.name}" in note


def test_desktop_entry_points_into_opt_and_takes_a_file(dist, tmp_path):
    path = make_archive.make_archive(dist, tmp_path / "out", "1.2.3", "linux", "x86_64")
    with tarfile.open(path) as tar:
        entry = tar.extractfile(f"{APP}/{APP}.desktop").read().decode()  # type: ignore[union-attr]
    lines = dict(line.split("=", 1) for line in entry.splitlines() if "=" in line)
    assert shlex.split(lines["Exec"]) == [f"/opt/{APP}/{APP}", "%f"]  # the unpacked folder's executable
    assert lines["Icon"] == f"/opt/{APP}/{APP}.png"  # shipped beside it, at the archive's top
    assert entry.count("Exec=") == 1 and entry.startswith("[Desktop Entry]")
    assert lines["MimeType"] == "application/x-transformer-explorer-checkpoint;"  # the rest is the template's


def test_unpacked_in_opt_the_entry_names_files_that_exist(dist, tmp_path):
    """Unpacked as INSTALL.txt says, the entry's Exec and Icon are files of the archive."""
    path = make_archive.make_archive(dist, tmp_path / "out", "1.2.3", "linux", "x86_64")
    opt = tmp_path / "opt"
    with tarfile.open(path) as tar:
        tar.extractall(opt, filter="tar")
    entry = (opt / APP / f"{APP}.desktop").read_text()
    for key in ("Exec", "Icon"):
        value = next(line.split("=", 1)[1] for line in entry.splitlines() if line.startswith(f"{key}="))
        target = opt / Path(shlex.split(value)[0]).relative_to("/opt")
        assert target.is_file(), key
    assert (opt / APP / APP).stat().st_mode & stat.S_IXUSR


def test_install_note_names_packages_the_program_asks_for(dist, tmp_path):
    """The note's apt line names only packages the program itself names when their libraries are missing."""
    import platform

    from explorer.system_check import XCB_LIBRARIES

    assert set(make_archive.LINUX_PACKAGES) <= {deb for deb, _ in XCB_LIBRARIES.values()}
    path = make_archive.make_archive(dist, tmp_path, "1.2.3", "linux", "x86_64")
    with tarfile.open(path) as tar:
        note = tar.extractfile(f"{APP}/INSTALL.txt").read().decode()  # type: ignore[union-attr]
    assert f"sudo apt install {' '.join(make_archive.LINUX_PACKAGES)})" in note
    assert f"glibc {platform.libc_ver()[1]} or newer" in note  # the building machine's


def test_windows_zip_keeps_the_top_folder(dist, tmp_path):
    path = make_archive.make_archive(dist, tmp_path, "1.2.3", "windows", "AMD64")
    assert path.name == "transformer-explorer-1.2.3-windows-x86_64.zip"
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        exe_mode = z.getinfo(f"{APP}/{APP}").external_attr >> 16
    files = {APP, "_internal/libfake.so.1", "_internal/libfake.so", "_internal/resources/model.ckpt"}
    assert names == {f"{APP}/{name}" for name in files}
    assert exe_mode & stat.S_IXUSR


def test_missing_build_is_named():
    with pytest.raises(FileNotFoundError, match="build it first"):
        make_archive.make_tarball(Path("/nonexistent"), Path("/tmp"), "1.2.3")


def test_version_comes_from_pyproject_and_a_tag_loses_its_v(dist, tmp_path, capsys):
    import tomllib

    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert make_archive.project_version() == expected
    make_archive.main([str(dist), "--out", str(tmp_path), "--version", "v9.9.9", "--system", "linux"])
    printed = Path(capsys.readouterr().out.strip())
    assert printed.name.startswith("transformer-explorer-9.9.9-linux-") and printed.is_file()
