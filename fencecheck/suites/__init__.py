"""What pytest and the suites plug into.

The pytest plug-in with the emulator fixtures and options (`pytest_plugin`, registered by the root conftest.py),
the Hypothesis profiles (`hypothesis_profiles`) and the progress lines a long run prints (`progress`,
`pytest_progress`). One room for the suites' settings and fixtures, below the runners, which read the same
profiles.
"""

from __future__ import annotations

import os
from pathlib import Path

# Where the suites write their evidence (races, coverage, parallel runs, stateful summaries, known-bad verdicts,
# emulator logs): `fencecheck gate --artifacts DIR` hands DIR to its suites' processes in this variable, so the
# report it collects from DIR finds what they wrote; a pytest run without it writes under <rootdir>/artifacts.
ENV_ARTIFACTS = "FENCECHECK_ARTIFACTS"
# Against one implementation (--only-system), what each test drove, as a JUnit property the gate counts
# (fencecheck.suites.pytest_plugin writes it, fencecheck.report.junit reads it).
DRIVES_PROPERTY = "fencecheck_drives"
DROVE_IMPLEMENTATION, DROVE_REFERENCE, DROVE_NOTHING = "implementation", "reference", "nothing"


def artifacts_root(rootpath: Path) -> Path:
    """The directory the suites write their evidence to: $FENCECHECK_ARTIFACTS, else `rootpath`/artifacts."""
    given = os.environ.get(ENV_ARTIFACTS, "").strip()
    return Path(given) if given else Path(rootpath) / "artifacts"
