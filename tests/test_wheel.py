"""What `pip install .` gives: the wheel built from this checkout, installed non-editable in a fresh venv,
runs every command from outside the checkout (a subpackage missing from the wheel crashed sweep and
diagnose even with --help, while every editable-install test passed)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ["check", "find", "sweep", "drift", "diagnose", "runtime", "tiny-model", "train"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv's python, with the wheel installed; its dependencies come from the running interpreter's
    site-packages (no registry is asked), mtpinspect itself only from the wheel."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(base / "dist"), str(ROOT)], check=True, timeout=300)
    wheel = next((base / "dist").glob("mtpinspect-*.whl"))
    venv.create(base / "venv", with_pip=True)
    python = base / "venv" / "bin" / "python"
    # The dependencies are those of the running interpreter, a venv or not (system_site_packages would give the
    # base interpreter's, which a venv's tests do not have): its site-packages as plain path entries, after the
    # new venv's own. Plain entries: the .pth files there (the editable install's finder) are not run.
    inner = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    outer = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (Path(inner) / "mtpinspect-test-dependencies.pth").write_text("".join(f"{path}\n" for path in outer))
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall", "-q",
                    str(wheel)], check=True, timeout=300)
    return python


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # -I: neither the checkout nor the current folder on sys.path, and no user site.
    return subprocess.run([str(python), "-I", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_the_package_comes_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    done = _run(installed, "-c", "import mtpinspect, mtpinspect.prompts as p; print(mtpinspect.__file__); print(p.__file__)",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    package, prompts = done.stdout.split()
    assert "site-packages" in package and not package.startswith(str(ROOT)), package
    assert "site-packages" in prompts, prompts


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_runs_from_the_wheel(installed: Path, tmp_path: Path, command: str) -> None:
    done = _run(installed, "-m", "mtpinspect", command, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "Usage:" in done.stdout


def test_the_sample_corpus_comes_with_the_wheel(installed: Path, tmp_path: Path) -> None:
    """`train --corpus sample` reads its text from the installed package (package data), every document of
    the checkout's sample there."""
    from mtpinspect.training.corpus import CLASSES, SAMPLE, documents, packages

    listing = ("import sys\n"
               "from pathlib import Path\n"
               "from mtpinspect.training.corpus import CLASSES, SAMPLE, SAMPLE_DIR, documents, packages\n"
               "found = packages(SAMPLE, Path(sys.argv[1]))\n"
               "print(SAMPLE_DIR)\n"
               "for cls in CLASSES: print(cls.name, *[d.path for d in documents(cls, found[cls.name])])\n")
    done = _run(installed, "-c", listing, str(tmp_path / "theirs"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    root, *classes = done.stdout.splitlines()
    assert "site-packages" in root and not root.startswith(str(ROOT)), root
    ours = packages(SAMPLE, tmp_path / "ours")
    assert classes == [" ".join([cls.name, *[d.path for d in documents(cls, ours[cls.name])]]) for cls in CLASSES]
