"""What a plug-in supplies for parallel programs: `ParallelSpec` (a `SystemPlugin`'s `parallel`, loaded on first use).

The engine (program, execute, case, property, minimize) is generic; a system brings:

- `programs(...)`: its Hypothesis strategy of `ParallelProgram`s, drawn so that contests actually happen
  (prefix calls that build a contested state, branch calls that race over it). The engine keeps only
  programs with a contested partition (`program.contested_keys`);
- `commit_failure`: that a call's first attempt may run with its commits rejected, and how that attempt's op
  is marked (`mark`), or None when the system has none. The engine runs such an attempt on a wire lane whose
  proxy rejects every Commit (`fencecheck.wire.lanes`), for any implementation; `client` (the journal's
  `CommitFailureClient`, the client-side path) is kept for callers of the spec outside the engine;
- `before_race(db, keys)` and `race_problems(db, initial_state, keys, before, project)`: its structural
  checks of the stored documents after the race, beyond the checker's verdict (per partition, and whatever
  the whole-project read-back must show), as problems in words. Documents outside every partition are the
  engine's to report unless `reports_strays`.

How a call is written to JSON is the plug-in's own `ops_to_json`/`ops_from_json`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs


@attrs.frozen
class CommitFailure:
    """`client(db)`: a client whose commits the server rejects; `mark(op)`: the op as recorded for that attempt
    (the journal's `commit_fails=True`, so the checker lets it apply or not)."""

    client: Callable[[Any], Any]
    mark: Callable[[Any], Any]


def _nothing_before(_db: Any, _keys: tuple[str, ...]) -> None:
    return None


def _no_problems(_db: Any, _state: Any, _keys: tuple[str, ...], _before: Any, _project: Mapping[str, Any]) -> list[str]:
    return []


@attrs.frozen
class ParallelSpec:
    # (max_prefix_ops=, max_branches=, max_concurrent_ops=, max_branch_ops=) -> SearchStrategy[ParallelProgram]
    programs: Callable[..., Any]
    commit_failure: CommitFailure | None = None
    before_race: Callable[[Any, tuple[str, ...]], Any] = _nothing_before
    # (db, model state after the prefix, called partitions, before_race's value, the whole project read back
    # after the race: path -> Stored) -> problems
    race_problems: Callable[[Any, Any, tuple[str, ...], Any, Mapping[str, Any]], list[str]] = _no_problems
    # race_problems already names every document outside every partition (the journal's project_problems):
    # the engine then does not report them a second time.
    reports_strays: bool = False
    # Its programs' sizes and shrinking times per Hypothesis profile (profile -> `fencecheck.parallel.Budget`, with
    # a "ci" entry for any profile it does not name): a system whose repetitions cost more runs fewer programs.
    # None: the engine's `fencecheck.parallel.BUDGETS` (`budget_for(plugin=...)` picks).
    budgets: Mapping[str, Any] | None = None
