"""The Hypothesis strategy of parallel programs for any plug-in: the system's own (`ParallelSpec.programs`),
kept only when some partition is called by two branches and written by at least one of them
(`program.contested_keys`). What makes a system's calls compete is the system's business (e.g.
`fencecheck/systems/journal/parallel.py`, `fencecheck/systems/lantern/parallel.py`); sizes are bounded the way
PropEr bounds parallel suffixes: 2 to `max_branches` branches, at most `max_concurrent_ops` calls over all
branches, at most `max_branch_ops` per branch and `max_prefix_ops` before them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fencecheck.errors import SystemNotFoundError
from fencecheck.parallel.program import ParallelProgram, contested_keys
from fencecheck.parallel.spec import ParallelSpec
from fencecheck.plugin.records import SystemPlugin

MAX_PREFIX_OPS = 6
MAX_BRANCHES = 4
MAX_CONCURRENT_OPS = 12
MAX_BRANCH_OPS = 4


def spec_of(plugin: SystemPlugin) -> ParallelSpec:
    """The plug-in's ParallelSpec; a system without one has no parallel programs (an error naming it)."""
    if plugin.parallel is None:
        raise SystemNotFoundError(f"the {plugin.name} has no parallel programs: its plug-in gives no `parallel` "
                                  "spec (fencecheck.parallel.ParallelSpec)")
    return plugin.parallel()


def programs(
    plugin: SystemPlugin,
    *,
    max_prefix_ops: int = MAX_PREFIX_OPS,
    max_branches: int = MAX_BRANCHES,
    max_concurrent_ops: int = MAX_CONCURRENT_OPS,
    max_branch_ops: int = MAX_BRANCH_OPS,
) -> st.SearchStrategy[ParallelProgram]:
    """Parallel programs of `plugin`'s system with at least one contested partition."""
    if not 2 <= max_branches <= max_concurrent_ops or max_branch_ops < 1:
        raise ValueError("need 2 <= max_branches <= max_concurrent_ops and max_branch_ops >= 1")
    sizes: dict[str, Any] = dict(max_prefix_ops=max_prefix_ops, max_branches=max_branches,
                                 max_concurrent_ops=max_concurrent_ops, max_branch_ops=max_branch_ops)
    return spec_of(plugin).programs(**sizes).filter(lambda program: bool(contested_keys(program)))
