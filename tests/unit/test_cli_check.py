"""`fencecheck check FILE`: a saved history of any plug-in judged alone, with its exit codes (0 ok, 1 illegal,
3 unknown, 2 usage)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest

import fencecheck.cli.main as cli
from fencecheck.checker.history import Call, Definite, History, Planned, simulate
from fencecheck.parallel.case import COUNTEREXAMPLE_FORMAT as PARALLEL_FORMAT
from fencecheck.runners.contest import Ids
from fencecheck.runners.contest_results import save_counterexample
from fencecheck.runners.contest_simulation import simulate_in_turn
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.lantern.plugin import LANTERN
from model.journal import Acquire, CommandRef, Register
from model.lantern import CreateVenue, Extinguish, Light
from tests.systems.journal.races import BY_NAME

REPO = Path(__file__).resolve().parents[2]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "histories"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MS = 1_000_000
NEW = {"journalSchemaVersion": 1, "outcome": "registered_new", "state": "registered"}


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["check", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _double_grant(n: int) -> list[Call]:
    """A registration, then two first acquires both granted fence 1: illegal."""
    ref = CommandRef("test", "firebase_uid", f"uid-{n}", f"0f8fad5b-d9cb-469f-a165-70867728950{n}", "c", 1, "{}")
    seconds = int((T0 + timedelta(seconds=61) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
    grant = {
        "journalSchemaVersion": 1, "lifecycleSchemaVersion": 1, "outcome": "lease_acquired", "state": "leased",
        "fenceEpoch": 1, "leaseExpiresAt": {"seconds": seconds, "nanoseconds": 0},
    }
    base = 10 * n
    return [
        Call(base, "api", Register(ref, T0), n, MS, Definite(NEW)),
        Call(base + 1, "a", Acquire(ref, "7c9e6679-7425-40de-944b-e07fc1f90ae7", T0 + timedelta(seconds=1)),
             2 * MS, 3 * MS, Definite(grant)),
        Call(base + 2, "b", Acquire(ref, "886313e1-3b8a-4372-9b90-0c9aee199e5d", T0 + timedelta(seconds=1)),
             4 * MS, 5 * MS, Definite(grant)),
    ]


def _contested_double_grant() -> list[Call]:
    """A registration, then 24 overlapping first acquires by distinct holders, one busy answer replaced by the
    winner's grant: illegal, but only after a few hundred placement attempts."""
    ref = CommandRef("test", "firebase_uid", "uid-0", "16fd2706-8baf-433b-82eb-8c7fada847da", "c", 1, "{}")
    plans = [Planned("api", Register(ref, T0), 0, MS // 2, MS // 4)]
    for k in range(24):
        invoked = MS + k * 1000
        holder = f"7c9e6679-7425-40de-944b-e07fc1f90a{k:02x}"
        plans.append(Planned(f"w{k}", Acquire(ref, holder, T0 + timedelta(seconds=1)), invoked, invoked + 9 * MS,
                             invoked + (k * 7919) % (9 * MS)))
    calls = list(simulate(plans, plugin=JOURNAL)[0].calls)
    grant = next(c for c in calls if c.outcome.observed.get("outcome") == "lease_acquired")
    busy = next(i for i, c in enumerate(calls) if c.outcome.observed.get("outcome") == "lease_busy")
    calls[busy] = attrs.evolve(calls[busy], outcome=Definite(grant.outcome.observed))
    return [attrs.evolve(c, id=100 + c.id) for c in calls]


def test_a_linearizable_fixture_exits_0(capsys):
    code, out, _err = _check(capsys, FIXTURES / "good-concurrent-registration.json")
    assert code == 0
    assert ": ok" in out.splitlines()[0] and "ok: 5 calls over 1 command key(s) are linearizable" in out


def test_an_illegal_history_exits_1_with_its_explanation(capsys):
    code, out, _err = _check(capsys, FIXTURES / "bad-double-fence-1-grant.json")
    assert code == 1
    assert "illegal: 1 of 1 command key(s)" in out and "First call that cannot be placed" in out
    assert "Timeline per caller" in out


def test_a_saved_race_is_checked_from_its_setup(tmp_path, capsys):
    """A race's file carries its setup: from the empty state its first acquire would be unregistered."""
    run = simulate_in_turn(BY_NAME["commit_failure_takeover"].contest(Ids(7)), plugin=JOURNAL)
    path = save_counterexample(run, tmp_path)
    code, out, _err = _check(capsys, path)
    assert code == 0 and "journal race" in out.splitlines()[0]
    history = json.loads(path.read_text())["history"]
    code, out, _err = _check(capsys, _write(tmp_path, "bare.json", history))
    assert code == 1  # the same history without its setup: the command was never registered


def test_a_bare_lantern_history_is_judged_with_the_lantern_model(tmp_path, capsys):
    venue = CreateVenue("bar", "Bar", 52.52, 13.405, 150)
    light = Light("u1", "l1", "bar", 52.52, 13.405, now=T0)
    lit = LANTERN.step(LANTERN.step(LANTERN.initial_state(), venue)[0], light)[1].output
    out_once = {"outcome": "extinguished", "lanternId": "l1"}
    calls = [
        Call(0, "admin", venue, 0, 10, Definite({"outcome": "venue_created", "venueId": "bar"})),
        Call(1, "a", light, 20, 30, Definite(lit)),
        Call(2, "b", Extinguish("u1", "l1", now=T0 + timedelta(seconds=3)), 40, 50, Definite(out_once)),
        Call(3, "c", Extinguish("u1", "l1", now=T0 + timedelta(seconds=3)), 41, 51, Definite(out_once)),
    ]
    good = _write(tmp_path, "good.json", History(calls[:3], system="lantern").to_json())
    bad = _write(tmp_path, "bad.json", History(calls, system="lantern").to_json())
    code, out, _err = _check(capsys, good)
    assert code == 0 and "lantern history" in out.splitlines()[0]
    code, out, _err = _check(capsys, bad)
    assert code == 1 and "project project is not linearizable" in out


def test_a_budget_that_runs_out_exits_3(capsys):
    code, out, _err = _check(capsys, FIXTURES / "good-concurrent-registration.json", "--budget", "1")
    assert code == 3
    assert "unknown: the search budget of 1 placement attempts" in out


def test_the_check_stops_at_the_first_illegal_key_unless_full(tmp_path, capsys):
    """The contested key comes first but takes longer to prove illegal than the double grant after it."""
    history = History(_contested_double_grant() + _double_grant(2), system="journal")
    path = _write(tmp_path, "two.json", history.to_json())
    code, out, _err = _check(capsys, path)
    assert code == 1
    assert "1 not checked" in out and out.count(": not checked (") == 1
    code, out, _err = _check(capsys, path, "--full")
    assert code == 1
    assert "illegal: 2 of 2 command key(s) are not linearizable." in out and "not checked" not in out
    # In a process of its own, of one thread, where the check forks (in pytest's it would search alone).
    forked = subprocess.run([sys.executable, "-m", "fencecheck", "check", str(path), "--full", "--processes", "2"],
                            cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert (forked.returncode, forked.stdout, forked.stderr) == (1, out, "")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"format": "fencecheck.nothing/1"}), "unknown format 'fencecheck.nothing/1'"),
        (json.dumps({"format": "fencecheck.history/1", "system": "ledger", "calls": []}), "no system called 'ledger'"),
        (json.dumps({"format": "fencecheck.race-result/2"}), "malformed: missing key 'history'"),
        (json.dumps({"format": "fencecheck.race-result/1", "history": {}}), "no longer reads (expected "
         "fencecheck.race-result/2 or fencecheck.race-counterexample/2). Run the race suite again"),
        (json.dumps({"format": PARALLEL_FORMAT, "history": None}), "failed in its sequential prefix"),
    ],
)
def test_a_missing_or_malformed_file_or_an_unknown_system_exits_2(tmp_path, capsys, content, message):
    path = tmp_path / "saved.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, out, err = _check(capsys, path)
    assert code == 2 and out == ""
    assert message in err and err.startswith("fencecheck: ")


def test_bad_options_are_usage_errors(capsys):
    for args in (["--budget", "-1"], ["--budget", "many"], ["--processes", "0"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["check", str(FIXTURES / "good-concurrent-registration.json"), *args])
        assert exit_info.value.code == 2
    assert "is not a whole number" in capsys.readouterr().err
