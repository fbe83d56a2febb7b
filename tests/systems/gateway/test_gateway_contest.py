"""The gateway's race scenarios and its contest checks without Firestore: every scenario through the model in
two orders is linearizable and keeps its promise; the plug-in's `contest_problems` (G-INV-1..12 at the end,
G-INV-2/9/10 across the race) passes a correct race and names what a damaged one broke; a saved gateway race
is checked (`fencecheck check`) and rebuilt for `fencecheck replay` exactly."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

import fencecheck.cli.main as cli
from fencecheck.checker.history import Definite
from fencecheck.emulator.firestore_io import Stored
from fencecheck.runners.contest_results import save_counterexample
from fencecheck.runners.contest_simulation import setup_state, simulate_in_turn
from fencecheck.runners.replay_contest import load_contest
from fencecheck.systems.gateway.plugin import GATEWAY
from model.gateway import CorruptRecord
from tests.systems.gateway.races import BY_NAME, SCENARIOS, GatewayScenario

ORDERS = ("listed", "reversed")


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_scenario_through_the_model_is_linearizable_and_keeps_its_promise(scenario: GatewayScenario,
                                                                                  order: str) -> None:
    contest = scenario.contest()
    indexes = list(range(contest.width))
    run = simulate_in_turn(contest, plugin=GATEWAY, order=indexes[::-1] if order == "reversed" else indexes)
    assert run.verdict.status == "ok", run.verdict.explain()
    assert scenario.promise(run) == []
    assert len({racer.op.journal.namespace_id for racer in contest.racers}) == 1


def test_the_election_is_24_way_and_split_12_12_over_two_regions() -> None:
    assert BY_NAME["consume_election"].contest().width == 24
    regions = [racer.op.region for racer in BY_NAME["consume_election_two_regions"].contest().racers]
    assert sorted(set(regions)) == ["eu-west", "us-east"] and regions.count("us-east") == 12 == regions.count("eu-west")


def test_a_promise_fails_on_two_winners() -> None:
    """The election's promise counts winners from the answers: two consume_claimed answers break it."""
    run = simulate_in_turn(BY_NAME["consume_election"].contest(), plugin=GATEWAY)
    first = run.racers[0]
    doubled = attrs.evolve(run, racers=(first, attrs.evolve(run.racers[1], calls=first.calls), *run.racers[2:]))
    assert "2 racers answered consume_claimed, exactly one expected" in BY_NAME["consume_election"].promise(doubled)


def _answered(record: Any, observed: dict[str, Any]) -> Any:
    """`record` with its final answer replaced by `observed`."""
    return attrs.evolve(record, calls=(*record.calls[:-1], attrs.evolve(record.calls[-1], outcome=Definite(observed))))


def test_a_read_neither_begun_nor_claimed_and_a_stale_read_after_the_race_break_the_readers_promise() -> None:
    """A read during the election shows the begun or the claimed journal (revision 2 at fence 0 is neither); the
    read after the race, once a claimer was answered, shows the claimed one."""
    scenario = BY_NAME["reads_during_consume_election"]
    run = simulate_in_turn(scenario.contest(), plugin=GATEWAY)
    assert scenario.promise(run) == [] and len(run.followers) == 1
    reader = run.record("reader-00")
    torn = _answered(reader, {**reader.final.observed, "revision": 2, "fence_epoch": 0})
    problems = scenario.promise(attrs.evolve(run, racers=tuple(torn if r is reader else r for r in run.racers)))
    assert any(problem.startswith("reader-00: read ") for problem in problems), problems
    (after,) = run.followers
    begun = {**after.final.observed, "state": "BEGUN", "revision": 1, "fence_epoch": 0, "lease_kind": None,
             "lease_active": False}
    problems = scenario.promise(attrs.evolve(run, followers=(_answered(after, begun),)))
    assert any(problem.startswith("read-after: read ") for problem in problems), problems


# --- contest_problems on stored documents --------------------------------------------------------------------


def _stored(docs: dict[str, dict[str, Any]]) -> dict[str, Stored]:
    """Model documents as read back: each event written by the commit of its revision, the record by its
    current revision's."""
    out = {}
    for path, data in docs.items():
        revision = data["revision"]
        out[path] = Stored(dict(data), (1_000 + revision, 0))
    return out


def _race(name: str = "provider_intent_election") -> tuple[Any, Any, dict[str, Stored], dict[str, Stored]]:
    contest = BY_NAME[name].contest()
    initial = setup_state(GATEWAY, contest.setup)
    run = simulate_in_turn(contest, plugin=GATEWAY)
    before = _stored({p: d for key in GATEWAY.partitions_of_state(initial) for p, d in
                      GATEWAY.documents_of(initial, key).items()})
    return contest, initial, before, _stored(run.documents)


def _record_path(docs: dict[str, Stored]) -> str:
    (path,) = [p for p in docs if len(p.split("/")) == 4]
    return path


def _problems(contest: Any, initial: Any, before: dict[str, Stored], after: dict[str, Stored]) -> list[str]:
    return GATEWAY.contest_problems(initial, before, after, contest)


def test_a_correct_race_has_no_contest_problems() -> None:
    contest, initial, before, after = _race()
    assert before and len(after) == len(before) + 1
    assert _problems(contest, initial, before, after) == []


def _bend(after: dict[str, Stored], path: str, **fields: Any) -> dict[str, Stored]:
    bent = dict(after)
    bent[path] = Stored({**after[path].data, **fields}, after[path].update_time)
    return bent


def test_a_deleted_event_and_a_changed_event_are_named() -> None:
    contest, initial, before, after = _race()
    first_event = _record_path(after) + "/events/0000000001"
    gone = {p: s for p, s in after.items() if p != first_event}
    assert f"G-INV-9 {first_event}: deleted during the race" in _problems(contest, initial, before, gone)
    changed = _bend(after, first_event, region="eu-west")
    assert f"G-INV-10 {first_event}: an event changed during the race" in _problems(contest, initial, before, changed)


def test_a_fence_that_moves_without_a_grant_and_a_changed_once_field_are_named() -> None:
    contest, initial, before, after = _race()
    path = _record_path(after)
    problems = _problems(contest, initial, before, _bend(after, path, fence_epoch=after[path].data["fence_epoch"] + 1))
    assert any(p.startswith(f"G-INV-9 {path}: the fence went from 1 to 3 over 1 lease grant") for p in problems)
    problems = _problems(contest, initial, before, _bend(after, path, permit_id="permit-2"))
    assert f"G-INV-9 {path}: write-once fields changed during the race: ['permit_id']" in problems


def test_a_record_and_its_event_from_different_commits_are_named() -> None:
    contest, initial, before, after = _race()
    path = _record_path(after)
    bent = dict(after)
    bent[path] = Stored(after[path].data, (5_000, 0))
    assert (f"G-INV-10 {path}: the record and its event {after[path].data['revision']} were written by different "
            "commits") in _problems(contest, initial, before, bent)


def test_an_invariant_broken_at_the_end_is_named_by_its_number() -> None:
    contest, initial, before, after = _race()
    path = _record_path(after)
    problems = _problems(contest, initial, before, _bend(after, path, lease_kind="consume"))
    assert any(p.startswith("G-INV-") and path in p for p in problems), problems


def test_a_changed_final_record_is_named() -> None:
    contest, initial, before, after = _race("identical_evidence_retries")
    path = _record_path(after)
    assert after[path].data["state"] == "COMMIT"
    problems = _problems(contest, initial, after, _bend(after, path, region_hint="x"))
    assert f"G-INV-9 {path}: a COMMIT record changed during the race" in problems


def test_a_journal_damaged_before_the_race_must_stay_exactly_as_it_was() -> None:
    contest, initial, before, after = _race()
    path = _record_path(after)
    (key,) = [key for key, _record in initial.records]
    damaged = initial.with_record(key, CorruptRecord("unknown_state"))
    assert _problems(contest, damaged, before, before) == []  # untouched: no invariant is asked of it
    assert f"G-INV-10 {path}: a record damaged before the race changed during the race" in _problems(
        contest, damaged, before, after)


# --- a saved gateway race: check and replay ---------------------------------------------------------------


def _check(capsys: pytest.CaptureFixture[str], path: Any) -> tuple[int, str]:
    code = cli.main(["check", str(path)])
    return code, capsys.readouterr().out


def test_a_saved_gateway_race_is_checked_from_its_setup_and_rebuilt_exactly(tmp_path, capsys) -> None:
    original = BY_NAME["report_against_reconcile"].contest()
    path = save_counterexample(simulate_in_turn(original, plugin=GATEWAY), tmp_path)
    assert path.name.startswith("race-gateway_report_against_reconcile-")
    code, out = _check(capsys, path)
    assert code == 0 and "gateway race" in out.splitlines()[0], out
    saved = load_contest(path)
    assert saved.plugin is GATEWAY and saved.contest.setup == original.setup
    assert saved.contest.racers == original.racers and saved.contest.scenario == original.scenario


def test_a_saved_gateway_race_with_two_election_winners_is_illegal(tmp_path, capsys) -> None:
    path = save_counterexample(simulate_in_turn(BY_NAME["consume_election"].contest(), plugin=GATEWAY), tmp_path)
    data = json.loads(path.read_text())
    calls = data["history"]["calls"]
    calls[1]["outcome"] = calls[0]["outcome"]  # a second worker told it won the election
    path.write_text(json.dumps(data))
    code, out = _check(capsys, path)
    assert code == 1 and "illegal" in out, out
