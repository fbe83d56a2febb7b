"""The Node journal's known-bad variants (known-bad.js, `main.js --variant NAME`), caught through the process
protocol by the journal's own lockstep machine.

Each variant runs as `journal:exec:node implementations/node-journal/main.js --variant NAME`: the harness sees
only the protocol. Caught is fencecheck.checker.known_bad_verdict's one rule, as for the Python catalogue
(stateful_tests/test_known_bad.py): a lockstep mismatch (a property of the contract), whose shrunk
counterexample, which names the command line, still fails against the variant and passes against the
reference. A crash, a hang or a protocol failure of the implementation is an error, never a catch.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from fencecheck.plugin.registry import plugin
from fencecheck.suites import hypothesis_profiles
from stateful_tests.known_bad_support import Target, catch
from tests.systems.journal.machine import JournalMachine

# Relative to the project root, where pytest runs (`./run tests`), so a counterexample's command line is
# the same on any checkout.
MAIN = "implementations/node-journal/main.js"
VARIANTS = {  # name -> (the model transition it breaks, what it does)
    "expiry-equality-active": ("acquire.expired.takeover_other", "a lease is still active at the microsecond it "
                               "expires"),
    "takeover-keeps-fence": ("acquire.expired.takeover_other", "a takeover keeps the fence epoch"),
    "terminal-retry-checks-expiry": ("complete.terminal.exact_retry", "an exact terminal retry after expiry is "
                                     "rejected"),
}


def spec(name: str) -> str:
    return f"journal:exec:node {MAIN} --variant {name}"


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_node_variant_is_caught_through_the_protocol(name, emulator, project_id, firestore_db, request,
                                                     record_property):
    if shutil.which("node") is None or not Path(MAIN).is_file():
        pytest.fail(f"node on PATH and {MAIN} under the working directory are needed: run from the project root "
                    "after ./run setup", pytrace=False)
    rule, description = VARIANTS[name]
    target = Target(
        name=f"node-{name}",
        result_name=f"node-{name}",
        rule=rule,
        description=description,
        build=lambda: plugin("journal").resolve(spec(name)),
        machine=JournalMachine,
        settings=settings(hypothesis_profiles.machine_settings(), database=None),
    )
    catch(target, emulator=emulator, project_id=project_id, db=firestore_db, failing_property=request.node.nodeid,
          record_property=record_property)
