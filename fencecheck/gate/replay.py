"""`gate --known-bad`: the would-be catch's counterexamples replayed, so the gate applies the whole of the one
definition of caught (fencecheck.checker.known_bad_verdict): a contract failure that also replays against the variant
and passes against the reference.

Runs inside the gate's emulator block, after the suites, only when the failing tests' recorded problems are a
would-be catch (a contract finding, and no crash, hang, protocol or harness problem: otherwise the verdict is
decided without replaying, `failures.would_be_catch`). Each counterexample is replayed in-process by
`fencecheck.cli.replay.replay_both`, which reports the kinds of what each replay found (a replay that crashed,
hung or stayed undecided does not confirm a catch); the outcomes go on the failures (`Failure.replays`), which
the sidecar and the evidence report carry and `failures.known_bad_verdict` judges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from fencecheck.report.failures import PROJECT_ROOT, Failure, Replay, replay_lines, would_be_catch


def replay_both(path: Path, variant: str, emulator: Any) -> Replay:
    import fencecheck.cli.replay as replay  # the replay machinery (pytest, the race runner) is loaded only when needed

    return replay.replay_both(path, variant, emulator)


def replay_catch(
    found: Sequence[Failure], variant: str, emulator: Any, *,
    replay: Callable[[Path, str, Any], Replay] | None = None, say: Callable[[str], None] | None = None,
) -> list[Failure]:
    """`found` with each contract failure's counterexamples replayed, when the failures are a would-be catch
    (`failures.would_be_catch`); `found` unchanged otherwise."""
    if not found or would_be_catch(found) is not None:
        return list(found)
    run = replay or replay_both
    say = say or (lambda line: print(line, flush=True))
    done = []
    for failure in found:
        if failure.contract and failure.counterexamples:
            replays = []
            for shown in failure.counterexamples:
                say(f"replaying {shown} against the variant and against the reference ...")
                path = Path(shown) if Path(shown).is_absolute() else PROJECT_ROOT / shown
                outcome = attrs.evolve(run(path, variant, emulator), counterexample=shown)
                for line in replay_lines(outcome):
                    say(line)
                replays.append(outcome)
            failure = attrs.evolve(failure, replays=tuple(replays))
        done.append(failure)
    return done

