"""Variants that only crash: every transaction raises `NameError` (a misspelt name in the reference's `_run`), the
way a broken harness or a careless edit would; or the lantern's racing operations raise a RuntimeError whose
message spans lines (`lantern_multi_line_crash`). They are not in the catalogues (nothing in them breaks a rule of
the contract); the known-bad runners' own tests use them to show that a crash is reported `error`, never
`caught` (fencecheck.checker.known_bad_verdict). Built with the catalogue's mechanism (`known_bad.loader`), loaded once
per process.
"""

from __future__ import annotations

import functools

import attrs

from fencecheck.systems.journal.plugin import ReferenceAPI
from fencecheck.systems.lantern.plugin import LanternSystem
from known_bad.lantern import Edit, load_fresh_copy
from known_bad.loader import load_reference_copy, mutate

JOURNAL_SPEC = "known_bad.journal:name-error"
LANTERN_SPEC = "known_bad.lantern:name-error"
LANTERN_CRASH_SPEC = "known_bad.lantern:multi-line-crash"
# A crash whose message spans lines, as an exec: implementation's stderr tail does: what a line-bound text rule
# once misread as a property of the contract.
MULTI_LINE_CRASH = "raise RuntimeError('BUG: a crash\\nTraceback (most recent call last):\\n  boom')"


@functools.cache
def journal_name_error() -> ReferenceAPI:
    """The reference journal, except that every call that reaches its transaction raises NameError."""
    package = load_reference_copy("crashing_name_error")
    mutate(package, "api._run", "return run_transaction(", "return run_transactoin(  # BUG: NameError")
    return attrs.evolve(ReferenceAPI.from_module(package), module=JOURNAL_SPEC)


# Where each lantern operation's NameError goes: one whole line of that function of reference/lantern/api.py.
_LANTERN_LINES = {
    "light_lantern": "return _run(db, light_body, request, attempt_log=attempt_log)",
    "extinguish_lantern": "return _run(db, extinguish_body, user_id, lantern_id, now, attempt_log=attempt_log)",
    "read_active_lanterns": "now = _read_clock(clock)",
}


@functools.cache
def lantern_name_error(*operations: str) -> LanternSystem:
    """The reference lantern, except that the named operations (default: every transaction, lights,
    extinguishes, reads and venue changes alike) raise NameError. A race scenario needs its setup to work:
    name only the operations it races (`light_lantern`, `extinguish_lantern`, `read_active_lanterns`)."""
    if operations:
        edits = tuple(Edit(f"api.{name}", _LANTERN_LINES[name], f"undefined_name  # BUG: NameError\n"
                           f"{_LANTERN_LINES[name]}") for name in operations)
    else:
        line = ("return run_lantern_transaction(db, factory(db, *args), look=factory(db, *args, read_only=True), "
                "log=attempt_log)")
        edits = (Edit("api._run", line, line.replace("run_lantern_transaction", "run_lantern_transactoin")
                      + "  # BUG: NameError"),)
    alias = "lantern_crashing_" + "_".join(operations or ("all",))
    return LanternSystem.of(LANTERN_SPEC, load_fresh_copy(alias, edits))


@functools.cache
def lantern_multi_line_crash(*operations: str) -> LanternSystem:
    """The reference lantern, except that the named operations (the racing ones of a scenario: `light_lantern`,
    `extinguish_lantern`, `read_active_lanterns`) raise a RuntimeError whose message spans three lines."""
    edits = tuple(Edit(f"api.{name}", _LANTERN_LINES[name], f"{MULTI_LINE_CRASH}  # BUG: a multi-line crash\n"
                       f"{_LANTERN_LINES[name]}") for name in operations)
    alias = "lantern_multi_line_crash_" + "_".join(operations)
    return LanternSystem.of(LANTERN_CRASH_SPEC, load_fresh_copy(alias, edits))
