"""Emulator discovery, host parsing and project ids, against a fake tree under tmp_path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fencecheck.emulator.discovery import (
    DEBIAN_PACKAGE,
    ENV_COMMAND,
    ENV_JAR,
    JAR_IN_SDK,
    MAIN_CLASS,
    discover_emulator,
    emulator_version,
    find_java,
    parse_emulator_host,
    project_id_for,
)
from fencecheck.errors import EmulatorNotFoundError, FencecheckError, JavaNotFoundError, UsageError


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def _file(path: Path, text: str = "jar") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """bin/ with java, an SDK with the emulator jar, and an empty home."""
    return {
        "bin": _executable(tmp_path / "bin" / "java").parent,
        "sdk": _file(tmp_path / "sdk" / JAR_IN_SDK).parents[2],
        "home": (tmp_path / "home"),
        "root": tmp_path,
    }


def _discover(env: dict[str, str], tree: dict[str, Path], sdk_roots: tuple[Path, ...] = ()):
    return discover_emulator(env, sdk_roots=sdk_roots, home=tree["home"])


def test_jar_env_var_wins_over_everything(tree):
    jar = _file(tree["root"] / "custom.jar")
    env = {"PATH": str(tree["bin"]), ENV_JAR: str(jar), ENV_COMMAND: "emu", "CLOUDSDK_ROOT_DIR": str(tree["sdk"])}
    command = _discover(env, tree, sdk_roots=(tree["sdk"],))
    assert command.source == "env-jar"
    assert command.jar == jar
    assert command.argv("127.0.0.1", 8080) == [
        str(tree["bin"] / "java"), "-Duser.language=en", "-cp", str(jar), MAIN_CLASS, "start",
        "--host", "127.0.0.1", "--port", "8080",
    ]


def test_jar_env_var_pointing_nowhere_names_the_variable(tree):
    env = {"PATH": str(tree["bin"]), ENV_JAR: str(tree["root"] / "missing.jar")}
    with pytest.raises(EmulatorNotFoundError, match=ENV_JAR):
        _discover(env, tree, sdk_roots=(tree["sdk"],))


def test_command_env_var_comes_second_and_gets_host_and_port(tree):
    _executable(tree["bin"] / "my-emulator")
    env = {"PATH": str(tree["bin"]), ENV_COMMAND: "my-emulator --flag 'a b'"}
    command = _discover(env, tree, sdk_roots=(tree["sdk"],))
    assert command.source == "env-command"
    assert command.argv("127.0.0.1", 9000, Path("r.rules")) == [
        "my-emulator", "--flag", "a b", "--host", "127.0.0.1", "--port", "9000", "--rules", "r.rules",
    ]


def test_command_env_var_with_unknown_program_is_not_found(tree):
    env = {"PATH": str(tree["bin"]), ENV_COMMAND: "no-such-emulator start"}
    with pytest.raises(EmulatorNotFoundError, match="no-such-emulator"):
        _discover(env, tree)


def test_command_env_var_that_does_not_parse_is_a_usage_error(tree):
    with pytest.raises(UsageError, match=ENV_COMMAND):
        _discover({"PATH": str(tree["bin"]), ENV_COMMAND: "emu 'unterminated"}, tree)


def test_default_sdk_root_is_found(tree):
    command = _discover({"PATH": str(tree["bin"])}, tree, sdk_roots=(tree["root"] / "nope", tree["sdk"]))
    assert command.source == "gcloud-sdk"
    assert command.jar == tree["sdk"] / JAR_IN_SDK


def test_cloudsdk_root_dir_is_preferred_to_default_roots(tree):
    other = _file(tree["root"] / "other-sdk" / JAR_IN_SDK).parents[2]
    env = {"PATH": str(tree["bin"]), "CLOUDSDK_ROOT_DIR": str(other)}
    assert _discover(env, tree, sdk_roots=(tree["sdk"],)).jar == other / JAR_IN_SDK


def test_sdk_is_found_through_a_gcloud_symlink_on_path(tree):
    gcloud = _executable(tree["sdk"] / "bin" / "gcloud")
    (tree["bin"] / "gcloud").symlink_to(gcloud)
    command = _discover({"PATH": str(tree["bin"])}, tree)
    assert command.jar == tree["sdk"] / JAR_IN_SDK
    assert str(tree["sdk"]) in command.description


def test_newest_firebase_cache_jar_is_used_last(tree):
    cache = tree["home"] / ".cache" / "firebase" / "emulators"
    for version in ("1.9.0", "1.19.9", "1.2.3"):
        _file(cache / f"cloud-firestore-emulator-v{version}.jar")
    _file(cache / "cloud-firestore-emulator-vX.jar")
    command = _discover({"PATH": str(tree["bin"])}, tree)
    assert command.source == "firebase-cache"
    assert command.jar == cache / "cloud-firestore-emulator-v1.19.9.jar"
    assert emulator_version(command) == "1.19.9"
    # ... but an SDK install wins over the cache.
    assert _discover({"PATH": str(tree["bin"])}, tree, sdk_roots=(tree["sdk"],)).source == "gcloud-sdk"


def test_sdk_version_comes_from_install_metadata(tree):
    snapshot = {"components": [{"id": "cloud-firestore-emulator", "version": {"version_string": "1.19.9"}}]}
    _file(tree["sdk"] / ".install" / "cloud-firestore-emulator.snapshot.json", json.dumps(snapshot))
    command = _discover({"PATH": str(tree["bin"])}, tree, sdk_roots=(tree["sdk"],))
    assert emulator_version(command) == "1.19.9"


def test_nothing_found_names_the_debian_package_and_the_variables(tree):
    with pytest.raises(EmulatorNotFoundError) as caught:
        _discover({"PATH": str(tree["bin"])}, tree, sdk_roots=(tree["root"] / "nope",))
    message = str(caught.value)
    assert DEBIAN_PACKAGE in message and ENV_JAR in message and ENV_COMMAND in message
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, FencecheckError)


def test_missing_java_says_how_to_install_it(tree):
    empty_bin = tree["root"] / "empty-bin"
    empty_bin.mkdir()
    with pytest.raises(JavaNotFoundError) as caught:
        _discover({"PATH": str(empty_bin)}, tree, sdk_roots=(tree["sdk"],))
    assert "apt-get install openjdk-17-jre-headless" in str(caught.value)
    assert "JAVA=" in str(caught.value)


def test_java_env_var_overrides_path_and_must_exist(tree):
    other_java = _executable(tree["root"] / "jdk" / "bin" / "java")
    assert find_java({"PATH": str(tree["bin"]), "JAVA": str(other_java)}) == str(other_java)
    assert find_java({"PATH": str(tree["bin"])}) == str(tree["bin"] / "java")
    with pytest.raises(JavaNotFoundError, match="JAVA="):
        find_java({"PATH": str(tree["bin"]), "JAVA": str(tree["root"] / "nope" / "java")})


def test_command_source_needs_no_java(tree):
    _executable(tree["root"] / "emu")
    command = _discover({"PATH": "", ENV_COMMAND: str(tree["root"] / "emu")}, tree)
    assert command.java is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [("127.0.0.1:8080", ("127.0.0.1", 8080)), ("localhost:1", ("localhost", 1)), ("[::1]:9000", ("::1", 9000))],
)
def test_emulator_host_parses(value, expected):
    assert parse_emulator_host(value) == expected


@pytest.mark.parametrize(
    "value", ["", "localhost", "127.0.0.1:", ":8080", "127.0.0.1:http", "127.0.0.1:70000", "http://x:1"]
)
def test_malformed_emulator_host_is_a_usage_error(value):
    with pytest.raises(UsageError, match="FIRESTORE_EMULATOR_HOST") as caught:
        parse_emulator_host(value)
    assert isinstance(caught.value, ValueError)


_VALID_ID = re.compile(r"^[a-z][a-z0-9-]*[a-z0-9]$")


def test_project_id_has_the_documented_shape():
    assert project_id_for("a1b2c3", "gw0", 7) == "demo-fc-a1b2c3-gw0-7"
    assert project_id_for("a1b2c3", "main", 12) == "demo-fc-a1b2c3-main-12"


@pytest.mark.parametrize(
    ("token", "worker", "counter"),
    [
        ("RUN_Token", "GW_1", 3),
        ("x" * 80, "gw12", 123456),
        ("abc", "w" * 80, 5),
        ("!!!", "___", 0),
        ("a" * 40, "b" * 40, 10**11),
    ],
)
def test_project_id_is_sanitized_and_short(token, worker, counter):
    project = project_id_for(token, worker, counter)
    assert _VALID_ID.match(project), project
    assert len(project) <= 30
    assert project.startswith("demo-fc-") and project.endswith(f"-{counter}")


def test_project_ids_differ_by_worker_and_counter():
    ids = {project_id_for("tok", worker, n) for worker in ("gw0", "gw1", "main") for n in range(50)}
    assert len(ids) == 150


def test_project_id_rejects_unusable_counters():
    with pytest.raises(UsageError):
        project_id_for("tok", "gw0", -1)
    with pytest.raises(UsageError):
        project_id_for("tok", "gw0", 10**20)
