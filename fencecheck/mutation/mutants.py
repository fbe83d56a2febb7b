"""The mutants of a system's reference, found and applied by cosmic-ray's operators (we write no mutator), and
each one written out as an importable copy of the reference's package.

A mutant is one application of one cosmic-ray operator at one occurrence in one file of the package that the
system's plug-in names (`SystemPlugin.mutation`). Its id is a hash of (package, file, operator, occurrence): the
same on every machine and in every run over the same source, which is what lets shards split the mutants and a
run resume where it stopped.

`materialize` writes the mutant as a package of its own (`fencecheck_mutant_<id>`: every file of the reference
package, with the one mutated), under a directory the suites' processes get on their PYTHONPATH. The suites then
run against it as they run against any implementation of the system, through its spec (`<system>:<package>`):
nothing in the harness is patched, and the reference itself stays unmutated beside it for the replays.

Mutants no test can kill are marked equivalent here, by construction, and never run: those that change only an
annotation of a module with `from __future__ import annotations` (Python keeps such annotations as strings
that nothing in the reference evaluates). docs/equivalent-mutants.md lists this rule and the mutants triaged by
hand.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import shutil
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path

import attrs

from fencecheck.errors import UsageError
from fencecheck.plugin.records import MutationTargets

PACKAGE_PREFIX = "fencecheck_mutant_"
# What an annotation-only mutant is called; the Stryker report marks it Ignored with this reason.
ANNOTATION_ONLY = ("equivalent: it changes only an annotation, which `from __future__ import annotations` keeps "
                   "unevaluated")


@attrs.frozen
class Mutant:
    """One mutation: `module` is the file's name inside the package, `operator` cosmic-ray's operator name,
    `occurrence` which of that operator's positions in the file; `start`/`end` are (line, column), 1-based and
    end-exclusive as Stryker's report has them."""

    id: str
    package: str
    module: str
    operator: str
    occurrence: int
    start: tuple[int, int]
    end: tuple[int, int]
    original: str = attrs.field(repr=False)
    mutated: str = attrs.field(repr=False)
    equivalent: str | None = None  # why it is equivalent by construction (never run), or None
    compile_error: str | None = None  # why its source does not compile (never run: Stryker's CompileError), or None

    @property
    def package_name(self) -> str:
        return PACKAGE_PREFIX + self.id

    @property
    def operator_short(self) -> str:
        return self.operator.rpartition("/")[2]

    def diff(self) -> str:
        name = f"{self.package.replace('.', '/')}/{self.module}"
        return "".join(difflib.unified_diff(self.original.splitlines(True), self.mutated.splitlines(True),
                                            f"a/{name}", f"b/{name}", n=1))

    def replacement(self) -> str:
        """The mutated text of its first changed line (what Stryker calls the replacement)."""
        old, new = self.original.splitlines(), self.mutated.splitlines()
        changed = next((line for line, before in zip(new, old, strict=False) if line != before), "")
        return changed.strip()


def package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"the mutation targets name the package {package!r}, which cannot be imported as a package: "
                         "name the reference's importable package in the plug-in's MutationTargets.package")
    return Path(next(iter(spec.submodule_search_locations)))


def mutant_id(package: str, module: str, operator: str, occurrence: int) -> str:
    return hashlib.sha256(f"{package}/{module}:{operator}:{occurrence}".encode()).hexdigest()[:12]


def _operators() -> Iterator[tuple[str, object]]:
    """cosmic-ray's operators that take no arguments, by name (those with arguments are configured per project,
    which fencecheck does not do)."""
    import cosmic_ray.plugins

    for name in sorted(cosmic_ray.plugins.operator_names()):
        operator_class = cosmic_ray.plugins.get_operator(name)
        if not operator_class.arguments():
            yield name, operator_class()


def _without_annotations(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    return ast.dump(tree)


def _postponed_annotations(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
               and any(alias.name == "annotations" for alias in node.names) for node in tree.body)


def compile_error(mutated: str) -> str | None:
    try:
        with warnings.catch_warnings():  # `x is 0` compiles with a SyntaxWarning: a mutant, not our problem
            warnings.simplefilter("ignore", SyntaxWarning)
            compile(mutated, "<mutant>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"the mutated source does not compile: {error.msg} (line {error.lineno})"
    return None


def annotation_only(original: str, mutated: str) -> bool:
    """Whether the mutation (which compiles) changed nothing but annotations of a module that postpones their
    evaluation."""
    before = ast.parse(original)
    return _postponed_annotations(before) and _without_annotations(before) == _without_annotations(ast.parse(mutated))


def operator_names() -> list[str]:
    return [name for name, _operator in _operators()]


def mutants_of(targets: MutationTargets, modules: tuple[str, ...] | None = None,
               operators: Collection[str] | None = None) -> list[Mutant]:
    """Every mutant of the targets' files (or of `modules`, a subset of them), made by every operator (or by
    `operators`, cosmic-ray's names of some), in file, operator and occurrence order."""
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code

    if targets.package is None or not targets.modules:
        raise UsageError("this system's plug-in declares nothing to mutate: give it MutationTargets(package=..., "
                         "decisions=(...)) (fencecheck.plugin.MutationTargets)")
    chosen = targets.modules if modules is None else modules
    unknown = [module for module in chosen if module not in targets.modules]
    if unknown:
        raise UsageError(f"--module {', '.join(unknown)}: not a mutation target of this system; its targets are "
                         f"{', '.join(targets.modules)}")
    known = operator_names()
    wrong = sorted(set(operators or ()) - set(known))
    if wrong:
        raise UsageError(f"--operator {', '.join(wrong)}: not an operator of cosmic-ray's that takes no arguments; "
                         f"they are {', '.join(known)}")
    directory = package_dir(targets.package)
    found = []
    for module in chosen:
        original = (directory / module).read_text(encoding="utf-8")
        tree = get_ast(original)
        for operator_name, operator in _operators():
            if operators is not None and operator_name not in operators:
                continue
            positions = [where for node in ast_nodes(tree) for where in operator.mutation_positions(node)]
            for occurrence, (start, end) in enumerate(positions):
                mutated = mutate_code(original, operator, occurrence)
                if mutated is None or mutated == original:
                    continue
                broken = compile_error(mutated)
                found.append(Mutant(
                    id=mutant_id(targets.package, module, operator_name, occurrence), package=targets.package,
                    module=module, operator=operator_name, occurrence=occurrence,
                    start=(start[0], start[1] + 1), end=(end[0], end[1] + 1), original=original, mutated=mutated,
                    compile_error=broken,
                    equivalent=None if broken or not annotation_only(original, mutated) else ANNOTATION_ONLY,
                ))
    return found


def materialize(mutant: Mutant, root: Path) -> Path:
    """Write the mutant as the package `root/<mutant.package_name>` (the reference package's files, the one
    mutated) and return `root`, the directory to put on the suites' PYTHONPATH."""
    target = root / mutant.package_name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(package_dir(mutant.package), target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / mutant.module).write_text(mutant.mutated, encoding="utf-8")
    return root


def remove(mutant: Mutant, root: Path) -> None:
    shutil.rmtree(root / mutant.package_name, ignore_errors=True)
