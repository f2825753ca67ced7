"""The project as a user installs it: `python -m build` makes an sdist and, from it, a wheel that
installs into a fresh environment and runs (its rule packs inside it, nothing read from this
checkout); the version, the README's pre-commit `rev:` and the changelog agree."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import eagle3lint
from tests.helpers import FIXTURES

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_rev_and_the_changelog_name_the_packages_version() -> None:
    version = eagle3lint.__version__
    revs = re.findall(r"^\s*rev:\s*(\S+)", (ROOT / "README.md").read_text(encoding="utf-8"), re.M)
    assert revs == [f"v{version}"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (\S+)", changelog, re.M)
    assert sections and sections[0] == version, sections


def test_the_built_wheel_installs_and_runs_in_a_fresh_environment(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    # No flags: the sdist first, then the wheel built from the unpacked sdist (what pip does
    # with an sdist), so a file the sdist leaves out fails here.
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        capture_output=True, text=True, check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    version = eagle3lint.__version__
    wheel = dist / f"eagle3lint-{version}-py3-none-any.whl"
    sdist = dist / f"eagle3lint-{version}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in dist.iterdir())
    names = zipfile.ZipFile(wheel).namelist()
    assert "eagle3lint/rules/sglang.toml" in names and "eagle3lint/rules/vllm.toml" in names
    assert not any(n.startswith(("tests/", "fixtures/", "bench/")) for n in names)
    with tarfile.open(sdist) as archive:
        assert f"eagle3lint-{version}/rules/sglang.toml" in archive.getnames()

    # The dependencies come from this environment (nothing fetched); the package itself only
    # from the wheel, run from a folder outside the checkout.
    env_dir = tmp_path / "env"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    where = subprocess.run(
        [str(python), "-c", "import eagle3lint; print(eagle3lint.__file__)"], capture_output=True, text=True, cwd=tmp_path, check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(env_dir), where.stdout
    shown = subprocess.run([str(env_dir / "bin" / "eagle3lint"), "--version"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert shown.returncode == 0 and version in shown.stdout, shown.stdout + shown.stderr
    checked = subprocess.run(
        [str(env_dir / "bin" / "eagle3lint"), "check", str(FIXTURES / "sglang_basic"), "--no-cache"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )
    assert checked.returncode == 1 and "E3L001" in checked.stdout, checked.stdout[-2000:] + checked.stderr[-2000:]
