"""Hypothesis settings profiles for the stateful suites, selected by name.

    ci        150 examples x 80 steps; the default of the stateful suite (about 1.5-2 minutes on 2 cores)
    thorough  600 examples x 150 steps (about 15 minutes); fails if a reachable transition never fired
    gate      ci, derandomized and without the example database: reproducible gate runs
    mutate    40 examples x 50 steps, derandomized, no example database, no shrinking: `fencecheck mutate`, which
              runs the suites once per mutant and needs a verdict, not the smallest counterexample

Select with Hypothesis's own option, `pytest --hypothesis-profile=thorough` (preferred), or with the
environment, `FENCECHECK_PROFILE=thorough`; the option wins when both are given. Without either, the
stateful machines use `ci` and other tests Hypothesis's default without its time limits (`UNTIMED`: no
per-example deadline, no too-slow health check; a loaded machine made them fail). `FENCECHECK_DERANDOMIZE=1`
derandomizes whichever profile the machines run with (and drops the example database).
`stateful_tests/conftest.py` registers these profiles and rejects an unknown name with a usage error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hypothesis import HealthCheck, Phase, settings

from fencecheck.errors import UsageError

ENV_PROFILE = "FENCECHECK_PROFILE"
ENV_DERANDOMIZE = "FENCECHECK_DERANDOMIZE"
DEFAULT_PROFILE = "ci"

# Health checks that only say "the emulator is slow" or "the state machine draws a lot".
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

# No explain phase: on the emulator it replays the failing program hundreds of times for little gain.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]

PROFILES: dict[str, dict] = {
    "ci": {"max_examples": 150, "stateful_step_count": 80},
    "thorough": {"max_examples": 600, "stateful_step_count": 150},
    "gate": {"max_examples": 150, "stateful_step_count": 80, "derandomize": True, "database": None},
    "mutate": {"max_examples": 40, "stateful_step_count": 50, "derandomize": True, "database": None,
               "phases": [phase for phase in _PHASES if phase is not Phase.shrink]},
}
FULL_COVERAGE_PROFILES = frozenset({"thorough"})

_selected: str | None = None
UNTIMED = "fencecheck-untimed"  # Hypothesis's default settings, less the time limits that flake under load


class UnknownProfile(UsageError):
    """A profile name nobody registered."""


def register_profiles() -> None:
    """Register every profile with Hypothesis (idempotent)."""
    for name, values in PROFILES.items():
        settings.register_profile(
            name,
            deadline=None,
            suppress_health_check=_QUIET,
            print_blob=True,
            report_multiple_bugs=False,
            **{"phases": _PHASES, **values},
        )
    # Parent named explicitly: without one Hypothesis inherits whatever profile is loaded at the time, so a
    # second registration after `gate` or `ci` was loaded made "untimed" a copy of that profile.
    settings.register_profile(
        UNTIMED, parent=settings.get_profile("default"), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


def known_profiles() -> list[str]:
    names = set(PROFILES)
    names.update(getattr(settings, "_profiles", {}))  # Hypothesis's own and other registered profiles
    return sorted(names)


def choose(option: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The profile asked for (`--hypothesis-profile` first, then FENCECHECK_PROFILE), or None; raises
    UnknownProfile for a name nobody registered."""
    name = option or env.get(ENV_PROFILE) or None
    if name is None:
        return None
    try:
        settings.get_profile(name)
    except Exception:
        source = "--hypothesis-profile" if option else ENV_PROFILE
        raise UnknownProfile(
            f"unknown Hypothesis profile {name!r} (from {source}); known profiles: {', '.join(known_profiles())}"
        ) from None
    return name


def select(name: str | None, *, load: bool = False) -> None:
    """Remember the chosen profile for the machines; with `load`, also make it Hypothesis's default (for a
    name from the environment: Hypothesis's pytest plugin loads the option's profile itself)."""
    global _selected
    _selected = name
    if load:
        settings.load_profile(UNTIMED if name is None else name)


def selected_name() -> str:
    return _selected or DEFAULT_PROFILE


def derandomize_requested(env: Mapping[str, str] = os.environ) -> bool:
    return env.get(ENV_DERANDOMIZE, "").strip().lower() in ("1", "true", "yes", "on")


def machine_settings() -> settings:
    """Settings for a state machine test: the selected profile (default `ci`), derandomized on request."""
    base = settings.get_profile(selected_name())
    extra: dict = {"deadline": None, "suppress_health_check": list(HealthCheck)}
    if derandomize_requested():
        extra.update(derandomize=True, database=None)
    return settings(base, **extra)


def requires_full_coverage() -> bool:
    return selected_name() in FULL_COVERAGE_PROFILES
