"""`./run`'s set-up, run for real on a copy of the script with a PATH the test builds: a stub `apt-get` records
its argv (the real one never runs), a stub `id` says who we are, and the commands a machine may lack (java,
chromium) are stubs that are there or not. The copy sits in tmp_path with a .venv that is already up to date
(its python runs this interpreter), so no venv is built and nothing is pip-installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fencecheck.systems import PROJECT_ROOT

TOOLS = ("bash", "dirname")  # what ./run itself needs from PATH besides the commands under test


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


class Machine:
    def __init__(self, root: Path, *, uid: int = 0, apt_get: bool = True, present: tuple[str, ...] = ()) -> None:
        self.root, self.bin, self.apt_log = root / "project", root / "bin", root / "apt-get.log"
        self.bin.mkdir()
        self.root.mkdir()
        shutil.copy(PROJECT_ROOT / "run", self.root / "run")
        (self.root / "pyproject.toml").write_text("")
        venv_bin = self.root / ".venv" / "bin"
        venv_bin.mkdir(parents=True)
        _stub(venv_bin / "python", f'exec "{sys.executable}" "$@"')
        stamp = self.root / ".venv" / ".fencecheck-installed"
        stamp.touch()
        os.utime(self.root / "pyproject.toml", (0, 0))  # older than the stamp: no pip install
        for tool in TOOLS:
            os.symlink(shutil.which(tool), self.bin / tool)
        _stub(self.bin / "python3", f'exec "{sys.executable}" "$@"')
        _stub(self.bin / "id", f"echo {uid}")
        for name in present:
            _stub(self.bin / name, "exit 0")
        if apt_get:
            # Records its argv; an install "installs" the packages' commands (chromium, java) as stubs.
            _stub(self.bin / "apt-get", f'''echo "$DEBIAN_FRONTEND $*" >> "{self.apt_log}"
for package in "$@"; do
  case "$package" in
    chromium) printf '#!/bin/sh\\n' > "{self.bin}/chromium"; /bin/chmod +x "{self.bin}/chromium" ;;
    openjdk-17-jre-headless) printf '#!/bin/sh\\n' > "{self.bin}/java"; /bin/chmod +x "{self.bin}/java" ;;
  esac
done''')

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        environment = {"PATH": str(self.bin), "HOME": str(self.root), **env}
        return subprocess.run(["bash", str(self.root / "run"), *args], env=environment, capture_output=True,
                              text=True, timeout=120, executable=shutil.which("bash"))

    def apt_calls(self) -> list[str]:
        return self.apt_log.read_text().splitlines() if self.apt_log.exists() else []


def test_root_with_apt_get_installs_what_is_missing_and_only_that(tmp_path):
    machine = Machine(tmp_path, present=("java",))
    result = machine.run("setup")
    assert result.returncode == 0, result.stderr
    assert machine.apt_calls() == [" update -qq", "noninteractive install -y -qq chromium"]
    assert (machine.bin / "chromium").exists()

    again = machine.run("setup")  # everything is there now: no apt-get at all, not even update
    assert again.returncode == 0, again.stderr
    assert len(machine.apt_calls()) == 2


def test_everything_present_installs_nothing(tmp_path):
    machine = Machine(tmp_path, present=("java", "chromium"))
    result = machine.run("setup")
    assert result.returncode == 0, result.stderr
    assert machine.apt_calls() == []
    assert "set-up complete" in result.stderr


def test_lint_needs_no_system_packages(tmp_path):
    machine = Machine(tmp_path, uid=1000)  # neither java nor chromium, and no way to install them
    os.symlink(shutil.which("true"), machine.root / ".venv" / "bin" / "ruff")
    assert machine.run("lint").returncode == 0
    assert machine.apt_calls() == []


@pytest.mark.parametrize("uid, apt_get", [(1000, True), (0, False)], ids=["not-root", "no-apt-get"])
def test_without_a_way_to_install_it_stops_with_exit_2_naming_package_and_command(tmp_path, uid, apt_get):
    machine = Machine(tmp_path, uid=uid, apt_get=apt_get)
    result = machine.run("tests")
    assert result.returncode == 2
    assert "openjdk-17-jre-headless chromium" in result.stderr
    assert "sudo apt-get install openjdk-17-jre-headless chromium" in result.stderr
    assert machine.apt_calls() == []


def test_gate_installs_java_but_not_chromium(tmp_path):
    machine = Machine(tmp_path)
    result = machine.run("gate", "--help")
    assert result.returncode == 0, result.stderr
    assert machine.apt_calls() == [" update -qq", "noninteractive install -y -qq openjdk-17-jre-headless"]


def test_a_missing_emulator_stops_with_exit_2_naming_its_package(tmp_path):
    machine = Machine(tmp_path, present=("java", "chromium"))
    # The harness's own discovery runs; an emulator jar that is not there is what a machine without one sees.
    result = machine.run("setup", FENCECHECK_EMULATOR_JAR=str(tmp_path / "no-such.jar"))
    assert result.returncode == 2
    assert "FENCECHECK_EMULATOR_JAR" in result.stderr
    assert "sudo apt-get install google-cloud-cli-firestore-emulator" in result.stderr
    assert machine.apt_calls() == []
