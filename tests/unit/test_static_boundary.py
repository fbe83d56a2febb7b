"""Static boundary of the reference (seeds' "Static tests prove no endpoint/index import and no
Stripe/logger/network/filesystem/environment/random dependency"; "no execute/send/provider-plan/
reconciliation/result-replay API"). Every module under reference/ is parsed with `ast`."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import reference
import reference.journal

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "reference").rglob("*.py"))
IDS = [str(path.relative_to(ROOT)) for path in MODULES]
RUNNER = ROOT / "reference" / "journal" / "runner.py"

FORBIDDEN = {
    "logging",
    "socket",
    "http",
    "urllib",
    "urllib3",
    "requests",
    "httpx",
    "aiohttp",
    "stripe",
    "os",
    "sys",
    "subprocess",
    "secrets",
    "uuid",
    "time",
    "random",
    "shutil",
    "pathlib",
    "io",
    "tempfile",
    "importlib",
    "pickle",
    "threading",
    "multiprocessing",
    "asyncio",
    "builtins",
    "ctypes",
}
RUNNER_ONLY = {"time", "random"}  # the retry scheduler, between attempts, outside the callback
STANDALONE = {"fencecheck", "model", "tests"}
PURE_ALLOWED = {"__future__", "dataclasses", "datetime", "re", "typing", "collections"}  # collections.abc only


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"), filename=str(path))


def _absolute_imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_there_are_modules_to_check():
    assert RUNNER in MODULES and len(MODULES) >= 9


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_no_forbidden_import(path):
    allowed_here = RUNNER_ONLY if path == RUNNER else set()
    tops = {name.split(".")[0] for name in _absolute_imports(_tree(path))}
    assert tops & (FORBIDDEN - allowed_here) == set()
    assert tops & STANDALONE == set()


def test_only_the_runner_imports_time_and_random():
    importers = {
        str(path.relative_to(ROOT))
        for path in MODULES
        if {name.split(".")[0] for name in _absolute_imports(_tree(path))} & RUNNER_ONLY
    }
    assert importers <= {"reference/journal/runner.py"}


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_no_print_open_eval_or_dynamic_import(path):
    calls = {
        node.func.id for node in ast.walk(_tree(path)) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert calls & {"print", "open", "eval", "exec", "compile", "__import__", "input", "breakpoint"} == set()


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_no_environment_lookup(path):
    tree = _tree(path)
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert (attributes | names) & {"environ", "getenv", "putenv", "environb"} == set()


@pytest.mark.parametrize("name", ["decide.py", "records.py"])
def test_decisions_and_records_import_only_pure_standard_modules(name):
    path = ROOT / "reference" / "journal" / name
    tree = _tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {alias.name for alias in node.names} <= PURE_ALLOWED, ast.unparse(node)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            assert node.module in PURE_ALLOWED | {"collections.abc"}, ast.unparse(node)
            if node.module.startswith("collections"):
                assert node.module == "collections.abc", ast.unparse(node)


CLOCK_OR_CHANCE = {
    "now",
    "utcnow",
    "today",
    "time",
    "time_ns",
    "monotonic",
    "perf_counter",
    "sleep",
    "uniform",
    "random",
    "randint",
    "choice",
    "shuffle",
    "system_clock",
    "clock",
}


@pytest.mark.parametrize("name", ["decide.py", "records.py", "identity.py", "outputs.py", "errors.py", "inputs.py"])
def test_pure_modules_never_read_a_clock_or_randomness(name):
    tree = _tree(ROOT / "reference" / "journal" / name)
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            called.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    assert called & CLOCK_OR_CHANCE == set()


def test_the_transaction_callback_reads_no_clock_and_draws_no_randomness():
    tree = _tree(ROOT / "reference" / "journal" / "api.py")
    (factory,) = [
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "_transaction_body"
    ]
    called = set()
    for node in ast.walk(factory):
        if isinstance(node, ast.Call):
            function = node.func
            called.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    assert "decide" in called  # the walk reaches the callback's body
    assert called & (CLOCK_OR_CHANCE | {"_read_clock", "print", "log", "debug", "info", "warning"}) == set()


# -- the exported surface --------------------------------------------------------------------------------------
OPERATIONS = {
    "register_commerce_command",
    "acquire_commerce_command_lease",
    "complete_commerce_command",
    "fail_commerce_command",
}
ERROR_SURFACE = {"CommandJournalError", "ERROR_CODES"}
OUTPUT_TYPES = {"RegistrationResult", "LeaseAcquired", "LifecycleObservation", "LeaseTimestamp"}
# Beyond the four operations, the error and the outputs, the package also exports the default clock and the
# attempt counter the operations accept (`clock=`, `attempt_log=`). Pinned so that any addition fails here.
SUPPORT = {"system_clock", "AttemptLog"}
EXPECTED_EXPORTS = OPERATIONS | ERROR_SURFACE | OUTPUT_TYPES | SUPPORT
FORBIDDEN_WORDS = ("execute", "send", "provider", "reconcil", "replay", "stripe", "permit", "authori")


@pytest.mark.parametrize("package", [reference, reference.journal], ids=["reference", "reference.journal"])
def test_package_exports_exactly_the_operations_error_and_outputs(package):
    assert set(package.__all__) == EXPECTED_EXPORTS
    assert len(package.__all__) == len(set(package.__all__))
    assert all(hasattr(package, name) for name in package.__all__)


@pytest.mark.parametrize("package", [reference, reference.journal], ids=["reference", "reference.journal"])
def test_no_public_name_offers_execution_sending_or_replay(package):
    public = [name for name in dir(package) if not name.startswith("_")]
    assert [name for name in public if any(word in name.lower() for word in FORBIDDEN_WORDS)] == []


# The command journal's seeds forbid these words; the gateway's contract (docs/gateway-contract.md) names its
# own operations with them (take_provider_intent, take_reconcile_lease, the permit group), so its modules are
# held to every other rule here but not to this one.
WORD_MODULES = [path for path in MODULES if "gateway" not in path.relative_to(ROOT).parts]


@pytest.mark.parametrize("path", WORD_MODULES, ids=[str(p.relative_to(ROOT)) for p in WORD_MODULES])
def test_no_definition_offers_execution_sending_or_replay(path):
    defined = [
        node.name
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
    ]
    assert [name for name in defined if any(word in name.lower() for word in FORBIDDEN_WORDS)] == []


REQUIRED = {
    "register_commerce_command": [
        "db",
        "environment",
        "caller_scope",
        "command_id",
        "command_type",
        "endpoint_schema_version",
        "payload",
    ],
}
REQUIRED["acquire_commerce_command_lease"] = [*REQUIRED["register_commerce_command"], "lease_id"]
REQUIRED["fail_commerce_command"] = [*REQUIRED["acquire_commerce_command_lease"], "expected_fence_epoch"]
REQUIRED["complete_commerce_command"] = [*REQUIRED["fail_commerce_command"], "terminal_reference_fingerprint"]


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_operations_are_keyword_only_with_the_specified_parameters(name):
    parameters = inspect.signature(getattr(reference, name)).parameters
    assert all(parameter.kind is inspect.Parameter.KEYWORD_ONLY for parameter in parameters.values())
    required = [key for key, parameter in parameters.items() if parameter.default is inspect.Parameter.empty]
    assert required == REQUIRED[name]
    assert set(parameters) - set(required) == {"clock", "attempt_log"}
    assert parameters["clock"].default is reference.system_clock
