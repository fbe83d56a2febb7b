"""A correct lantern layer written the ordinary way, for tests: the lantern reference with its transaction
runner replaced by google-cloud-firestore's own `transactional` and its default attempts
(`tests.fakes.sdk_runner`).

Built as the known-bad lantern variants are (known_bad/lantern): an isolated copy of `reference/lantern`
(`known_bad.loader.load_reference_copy`, loaded as `known_bad._copies.ordinary_lantern.lantern`) with one
thing replaced, here the copy's `api._run`, the one place the layer runs a transaction. The reference's runs
`run_lantern_transaction` (the journal's round-aligned retries and read-only looks); the copy's runs the
read-write body alone through the SDK: an abort is retried at once, at most 5 attempts, and giving up is
`lantern_unavailable`. Every decision, read, write, precondition (venue pre-read, geofence, schedule) and the
one clock reading per call are the reference's own code, so it answers what the reference answers whenever
its transactions get through. `reference.lantern` itself is never modified.

The lantern plug-in resolves only `reference.lantern` and `known_bad.lantern:<variant>`, so this system is
handed over as an object: `ORDINARY_LANTERN`, a `LanternSystem`, wherever an implementation goes (the contest
runner's `implementation=`, `Lockstep(system=...)`). Its name, `tests.fakes.ordinary_lantern:ORDINARY_LANTERN`,
is a label in output, not a spec any plug-in resolves.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from fencecheck.systems.lantern.plugin import LanternSystem
from known_bad.lantern import LANTERN_PACKAGE_DIR
from known_bad.loader import copy_modules, load_reference_copy
from tests.fakes.sdk_runner import run_sdk_transaction

ALIAS = "ordinary_lantern"
NAME = "tests.fakes.ordinary_lantern:ORDINARY_LANTERN"


def _load() -> ModuleType:
    """The copy of reference/lantern whose transactions run through the SDK's `transactional`."""
    package = load_reference_copy(ALIAS, LANTERN_PACKAGE_DIR, package_name="lantern")
    api = copy_modules(package)["api"]
    error = package.LanternError

    def run_through_sdk(db: Any, factory: Callable[..., Callable[[Any], Any]], *args: Any, attempt_log: Any) -> Any:
        # the reference's `_run` also builds the read-only look (`read_only=True`); an ordinary layer has none
        return run_sdk_transaction(db, factory(db, *args), contract_error=error,
                                   unavailable=lambda: error("lantern_unavailable"), log=attempt_log)

    api._run = run_through_sdk  # the public operations look `_run` up in their module at each call
    return package


ORDINARY_LANTERN_API = _load()
ORDINARY_LANTERN = LanternSystem.of(NAME, ORDINARY_LANTERN_API)

__all__ = ["NAME", "ORDINARY_LANTERN", "ORDINARY_LANTERN_API"]
