"""fencecheck.mutation: the mutants cosmic-ray makes of each system's reference (stable ids, the ones never run),
each written out as a package its system resolves; the results files that make a run resumable and shardable;
the Stryker report and its schema; and the evidence report's section."""

from __future__ import annotations

import json
import sys

import attrs
import pytest

from fencecheck import report
from fencecheck.errors import UsageError
from fencecheck.mutation import equivalents, outcomes, stryker
from fencecheck.mutation import mutants as mutation
from fencecheck.plugin.records import MutationTargets
from fencecheck.plugin.registry import SYSTEM_NAMES
from fencecheck.plugin.registry import plugin as plugin_named
from fencecheck.report.mutation import mutation_html, mutation_markdown

BUILT_IN = ("journal", "lantern", "gateway")


@pytest.fixture(scope="module")
def journal_decide() -> list[mutation.Mutant]:
    return mutation.mutants_of(plugin_named("journal").mutation, ("decide.py",))


def test_each_built_in_system_names_its_decision_module_and_runner_as_targets():
    for system in BUILT_IN:
        targets = plugin_named(system).mutation
        assert targets.decisions == ("decide.py",) and targets.others == ("runner.py",), system
        directory = mutation.package_dir(targets.package)
        assert all((directory / module).is_file() for module in targets.modules), system


def test_mutant_ids_are_stable_unique_and_each_mutant_changes_the_source(journal_decide):
    again = mutation.mutants_of(plugin_named("journal").mutation, ("decide.py",))
    assert [m.id for m in again] == [m.id for m in journal_decide]
    assert len({m.id for m in journal_decide}) == len(journal_decide) > 100
    assert all(m.mutated != m.original for m in journal_decide)
    assert all(m.diff().startswith("--- a/reference/journal/decide.py") for m in journal_decide)
    first = journal_decide[0]
    assert first.id == mutation.mutant_id("reference.journal", "decide.py", first.operator, first.occurrence)


def test_annotation_only_mutants_are_equivalent_only_under_postponed_annotations():
    postponed = "from __future__ import annotations\n\ndef f(x: int | None) -> int | None:\n    return x | 1\n"
    in_annotation = postponed.replace("x: int | None", "x: int + None")
    in_body = postponed.replace("x | 1", "x + 1")
    assert mutation.annotation_only(postponed, in_annotation)
    assert not mutation.annotation_only(postponed, in_body)
    evaluated = postponed.removeprefix("from __future__ import annotations\n")
    assert not mutation.annotation_only(evaluated, evaluated.replace("x: int | None", "x: int + None"))


def test_mutants_that_do_not_compile_are_never_run_and_say_why(journal_decide):
    assert mutation.compile_error("def f(+, x):\n    pass\n").startswith("the mutated source does not compile")
    assert mutation.compile_error("x is 0\n") is None  # a SyntaxWarning is no compile error
    runner = mutation.mutants_of(plugin_named("journal").mutation, ("runner.py",))
    broken = [m for m in runner if m.compile_error]
    assert broken, "runner.py's keyword-only marker (*) replaced by an operator does not compile"
    assert all(stryker.not_run(m).status == outcomes.COMPILE_ERROR for m in broken)
    assert all(stryker.not_run(m).status == outcomes.EQUIVALENT for m in journal_decide if m.equivalent)


def test_targets_a_system_does_not_have_are_usage_errors():
    with pytest.raises(UsageError, match="declares nothing to mutate"):
        mutation.mutants_of(MutationTargets())
    with pytest.raises(UsageError, match="not a mutation target of this system"):
        mutation.mutants_of(plugin_named("journal").mutation, ("records.py",))
    with pytest.raises(UsageError, match="cannot be imported as a package"):
        mutation.package_dir("no_such_package_anywhere")


@pytest.mark.parametrize("system", BUILT_IN)
def test_a_materialized_mutant_is_an_implementation_its_system_resolves(system, tmp_path):
    plugin = plugin_named(system)
    mutant = mutation.mutants_of(plugin.mutation, ("decide.py",), {"core/AddNot"})[0]
    root = mutation.materialize(mutant, tmp_path)
    assert (root / mutant.package_name / "decide.py").read_text() == mutant.mutated
    assert (root / mutant.package_name / "api.py").is_file()
    sys.path.insert(0, str(root))
    try:
        resolved = plugin.resolve(f"{system}:{mutant.package_name}")
        assert resolved is not plugin.reference
        assert plugin.implementations.spec_of(resolved) == f"{system}:{mutant.package_name}" or system == "journal"
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n.startswith(mutant.package_name)]:
            del sys.modules[name]
    mutation.remove(mutant, root)
    assert not (root / mutant.package_name).exists()


def test_shards_split_the_mutants_into_disjoint_parts_that_cover_them_all():
    items = list(range(23))
    parts = [outcomes.Shard(index, 4).take(items) for index in range(1, 5)]
    assert sorted(x for part in parts for x in part) == items
    assert outcomes.Shard.parse("3/4") == outcomes.Shard(3, 4)
    for bad in ("0/4", "5/4", "4", "a/b", "1/0"):
        with pytest.raises(UsageError, match="expected K/N"):
            outcomes.Shard.parse(bad)


def test_results_resume_skipping_a_cut_line_and_the_last_line_for_a_mutant_wins(tmp_path):
    path = outcomes.results_path(tmp_path, outcomes.Shard(1, 2))
    outcomes.append(path, outcomes.Outcome("a", "error", "harness"))
    outcomes.append(path, outcomes.Outcome("a", "caught", "lockstep mismatch", 3.5, "stateful", "T::runTest"))
    outcomes.append(outcomes.results_path(tmp_path, outcomes.Shard(2, 2)), outcomes.Outcome("b", "survived", "-"))
    with path.open("a") as handle:
        handle.write('{"id": "c", "status": "cau')  # interrupted mid-line
    found = outcomes.load(tmp_path)
    assert sorted(found) == ["a", "b"]
    assert found["a"].status == "caught" and found["a"].test == "T::runTest"
    with pytest.raises(ValueError, match="status must be one of"):
        outcomes.Outcome("x", "killed", "-")


def test_the_score_counts_timeouts_as_not_killed_and_leaves_out_errors_and_the_mutants_never_run():
    found = [outcomes.Outcome(str(n), status, "-") for n, status in
             enumerate(("caught", "caught", "survived", "timeout", "error", "equivalent", "compile-error"))]
    assert outcomes.score(found) == (2, 4)


def test_the_stryker_report_validates_and_maps_every_status(journal_decide):
    run = [m for m in journal_decide if stryker.not_run(m) is None][:5]
    decided = {run[0].id: outcomes.Outcome(run[0].id, "caught", "lockstep mismatch", 2.0, "stateful", "T::runTest"),
               run[1].id: outcomes.Outcome(run[1].id, "survived", "every suite passed", 60.0),
               run[2].id: outcomes.Outcome(run[2].id, "timeout", "still running"),
               run[3].id: outcomes.Outcome(run[3].id, "error", "a crash")}
    data = stryker.report(journal_decide, decided)
    assert stryker.problems(data) == []
    entries = {m["id"]: m for m in data["files"]["reference/journal/decide.py"]["mutants"]}
    assert [entries[m.id]["status"] for m in run] == ["Killed", "Survived", "Timeout", "RuntimeError", "Pending"]
    assert entries[run[0].id]["killedBy"] == ["T::runTest"] and entries[run[0].id]["duration"] == 2000
    assert "killedBy" not in entries[run[1].id]
    assert {entries[m.id]["status"] for m in journal_decide if m.equivalent} == {"Ignored"}
    data["files"]["reference/journal/decide.py"]["mutants"][0]["status"] = "Caught"
    assert any("Caught" in problem for problem in stryker.problems(data))


def test_the_evidence_report_shows_the_scores_and_every_survivor_with_its_diff(journal_decide, tmp_path):
    run = [m for m in journal_decide if stryker.not_run(m) is None][:3]
    decided = {run[0].id: outcomes.Outcome(run[0].id, "caught", "-"),
               run[1].id: outcomes.Outcome(run[1].id, "survived", "-"),
               run[2].id: outcomes.Outcome(run[2].id, "error", "-")}
    target = tmp_path / "mutation" / "journal" / "mutation-report.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(stryker.report(run, decided)))
    section = report.collect(tmp_path).mutation
    assert [(f.system, f.path, f.killed, f.counted) for f in section.files] == [
        ("journal", "reference/journal/decide.py", 1, 2)]
    assert [s.id for s in section.survivors] == [run[1].id]
    lines = "\n".join(mutation_markdown(section, lambda text: f"`{text}`"))
    assert "50.0% (1/2)" in lines and "1 RuntimeError" in lines and run[1].id in lines
    html = str(mutation_html(section))
    assert run[1].replacement() in html.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&") \
        or run[1].diff().splitlines()[-1][1:].strip() in html
    assert report.collect(tmp_path / "none").mutation is None


def test_every_registered_system_with_targets_yields_mutants_of_every_target():
    for system in SYSTEM_NAMES:
        targets = plugin_named(system).mutation
        if targets.modules:
            found = mutation.mutants_of(targets, operators={"core/AddNot", "core/ExceptionReplacer"})
            assert {m.module for m in found} == set(targets.modules), system


def test_an_operator_cosmic_ray_does_not_have_is_a_usage_error():
    with pytest.raises(UsageError, match="not an operator of cosmic-ray's"):
        mutation.mutants_of(plugin_named("journal").mutation, operators={"core/NoSuchOperator"})


def test_every_triaged_equivalent_of_a_built_in_system_still_names_its_mutant():
    for system in BUILT_IN:
        targets = plugin_named(system).mutation
        entries = equivalents.load(targets)
        if not entries:
            continue
        made = mutation.mutants_of(targets, tuple({e.file for e in entries}), {e.operator for e in entries})
        marked, stale = equivalents.apply(made, entries)
        assert [equivalents.describe_stale(entry) for entry in stale] == [], system
        triaged = {m.id for m in marked if (m.equivalent or "").startswith(equivalents.BY_TRIAGE)}
        assert triaged == {entry.id for entry in entries}, system


def test_a_triaged_mutant_is_ignored_even_after_a_run_judged_it_and_a_moved_entry_is_stale(journal_decide):
    first = next(m for m in journal_decide if stryker.not_run(m) is None)
    second = next(m for m in journal_decide if m.operator == first.operator and m.start[0] != first.start[0])
    line = first.original.splitlines()[first.start[0] - 1].strip()
    entry = equivalents.Triaged(first.id, first.module, first.start[0], first.operator, line, "cannot matter")
    moved = attrs.evolve(entry, id=second.id)  # the id of another mutant of the same file and operator: stale
    marked, stale = equivalents.apply([first, second], [entry])
    assert marked[0].equivalent == equivalents.BY_TRIAGE + "cannot matter" and marked[1] == second and not stale
    recorded = {first.id: outcomes.Outcome(first.id, "survived", "every suite passed")}
    data = stryker.report(marked, recorded)
    statuses = {m["id"]: (m["status"], m.get("statusReason")) for m in data["files"]["reference/journal/decide.py"]
                ["mutants"]}
    assert statuses[first.id] == ("Ignored", equivalents.BY_TRIAGE + "cannot matter")
    assert equivalents.apply([first, second], [moved]) == ([first, second], [moved])
    elsewhere = attrs.evolve(entry, line=entry.line + 1)
    assert equivalents.apply([first], [elsewhere]) == ([first], [elsewhere])


def test_an_equivalents_file_that_is_missing_or_malformed_is_a_usage_error(tmp_path, monkeypatch):
    with pytest.raises(UsageError, match="expected \"package:file.toml\""):
        equivalents.load(MutationTargets(package="reference.journal", decisions=("decide.py",),
                                         equivalents="equivalents.toml"))
    with pytest.raises(UsageError, match="cannot be read"):
        equivalents.load(MutationTargets(package="reference.journal", decisions=("decide.py",),
                                         equivalents="fencecheck.systems.journal:absent.toml"))
    package = tmp_path / "triage_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "eq.toml").write_text('[[equivalent]]\nid = "x"\nfile = "decide.py"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UsageError, match="must have exactly the keys id, file, line, operator, code, why"):
        equivalents.load(MutationTargets(package="reference.journal", decisions=("decide.py",),
                                         equivalents="triage_pkg:eq.toml"))
