"""`./run`'s set-up, run for real on a copy of the script with a PATH the test builds: a stub `apt-get` records
its argv (the real one never runs), a stub `id` says who we are, and the commands a machine may lack (java,
chromium, node, npm) are stubs that are there or not. The copy sits in tmp_path with a .venv that is already up to date
(its python runs this interpreter), so no venv is built and nothing is pip-installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fencecheck.plugin.specs import PROJECT_ROOT

TOOLS = ("bash", "dirname", "touch")  # what ./run itself needs from PATH besides the commands under test


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


# The command each Debian package provides, and what its stub does (npm records its argv and makes the
# node_modules directory that `npm ci --prefix DIR` would make).
PACKAGES = {"chromium": "chromium", "openjdk-17-jre-headless": "java", "nodejs": "node", "npm": "npm"}


class Machine:
    def __init__(self, root: Path, *, uid: int = 0, apt_get: bool = True, present: tuple[str, ...] = ()) -> None:
        self.root, self.bin, self.apt_log = root / "project", root / "bin", root / "apt-get.log"
        self.npm_log, self.available = root / "npm.log", root / "available"
        for directory in (self.bin, self.root, self.available):
            directory.mkdir()
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
        for command in PACKAGES.values():
            body = f'echo "$*" >> "{self.npm_log}"; /bin/mkdir -p "$3/node_modules"' if command == "npm" else "exit 0"
            _stub(self.available / command, body)
        for name in present:
            shutil.copy(self.available / name, self.bin / name)
        if apt_get:
            # Records its argv; an install "installs" the packages' commands as stubs.
            cases = "\n".join(f"    {package}) c={command} ;;" for package, command in PACKAGES.items())
            _stub(self.bin / "apt-get", f"""echo "$DEBIAN_FRONTEND $*" >> "{self.apt_log}"
for package in "$@"; do
  c=
  case "$package" in
{cases}
  esac
  [ -n "$c" ] && /bin/cp "{self.available}/$c" "{self.bin}/$c"
done
exit 0""")

    def with_node_implementation(self) -> Path:
        lock = self.root / "implementations" / "node-journal" / "package-lock.json"
        lock.parent.mkdir(parents=True)
        lock.write_text("{}")
        return lock

    def npm_calls(self) -> list[str]:
        return self.npm_log.read_text().splitlines() if self.npm_log.exists() else []

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        environment = {"PATH": str(self.bin), "HOME": str(self.root), **env}
        return subprocess.run(["bash", str(self.root / "run"), *args], env=environment, capture_output=True,
                              text=True, timeout=120, executable=shutil.which("bash"))

    def apt_calls(self) -> list[str]:
        return self.apt_log.read_text().splitlines() if self.apt_log.exists() else []


def test_root_with_apt_get_installs_what_is_missing_and_only_that(tmp_path):
    machine = Machine(tmp_path, present=("java", "node", "npm"))
    result = machine.run("setup")
    assert result.returncode == 0, result.stderr
    assert machine.apt_calls() == [" update -qq", "noninteractive install -y -qq chromium"]
    assert (machine.bin / "chromium").exists()

    again = machine.run("setup")  # everything is there now: no apt-get at all, not even update
    assert again.returncode == 0, again.stderr
    assert len(machine.apt_calls()) == 2


ALL = tuple(PACKAGES.values())


def test_everything_present_installs_nothing(tmp_path):
    machine = Machine(tmp_path, present=ALL)
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
    assert "openjdk-17-jre-headless chromium nodejs npm" in result.stderr
    assert "sudo apt-get install openjdk-17-jre-headless chromium nodejs npm" in result.stderr
    assert machine.apt_calls() == []


def test_gate_installs_java_and_node_but_not_chromium(tmp_path):
    """The gate's emulator suite starts the Node journal (its wire tests), so a fresh machine's `./run gate`
    needs Node and the implementation's npm packages even against the reference."""
    machine = Machine(tmp_path)
    machine.with_node_implementation()
    result = machine.run("gate", "--help")
    assert result.returncode == 0, result.stderr
    assert machine.apt_calls() == [" update -qq", "noninteractive install -y -qq openjdk-17-jre-headless nodejs npm"]
    assert len(machine.npm_calls()) == 1


def test_a_missing_emulator_stops_with_exit_2_naming_its_package(tmp_path):
    machine = Machine(tmp_path, present=ALL)
    # The harness's own discovery runs; an emulator jar that is not there is what a machine without one sees.
    result = machine.run("setup", FENCECHECK_EMULATOR_JAR=str(tmp_path / "no-such.jar"))
    assert result.returncode == 2
    assert "FENCECHECK_EMULATOR_JAR" in result.stderr
    assert "sudo apt-get install google-cloud-cli-firestore-emulator" in result.stderr
    assert machine.apt_calls() == []


def test_node_is_installed_and_npm_ci_runs_once_per_lock_file(tmp_path):
    machine = Machine(tmp_path, present=("java", "chromium"))
    lock = machine.with_node_implementation()
    result = machine.run("setup")
    assert result.returncode == 0, result.stderr
    assert machine.apt_calls() == [" update -qq", "noninteractive install -y -qq nodejs npm"]
    assert machine.npm_calls() == ["ci --prefix implementations/node-journal --no-audit --no-fund --loglevel=error"]

    assert machine.run("setup").returncode == 0  # installed, and the lock file did not change: nothing again
    assert len(machine.apt_calls()) == 2 and len(machine.npm_calls()) == 1

    stamp = lock.parent / "node_modules" / ".fencecheck-installed"
    os.utime(stamp, (0, 0))  # the lock file is now newer than the last install: npm ci again
    assert machine.run("setup").returncode == 0
    assert len(machine.npm_calls()) == 2


def test_a_node_older_than_18_stops_with_exit_2(tmp_path):
    machine = Machine(tmp_path, present=ALL)
    _stub(machine.bin / "node", "exit 1")  # what the version check sees from Node 16
    result = machine.run("setup")
    assert result.returncode == 2
    assert "Node.js 18 or newer" in result.stderr and "sudo apt-get install nodejs npm" in result.stderr


def test_gate_against_an_exec_implementation_installs_node_too(tmp_path):
    machine = Machine(tmp_path, present=("java",))
    machine.with_node_implementation()
    result = machine.run("gate", "--help", "--system", "journal:exec:node implementations/node-journal/main.js")
    assert result.returncode == 0, result.stderr
    assert machine.apt_calls() == [" update -qq", "noninteractive install -y -qq nodejs npm"]
    assert len(machine.npm_calls()) == 1
