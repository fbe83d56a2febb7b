"""Without a named profile, property tests run under Hypothesis's default settings less its time limits: a
200 ms per-example deadline and the too-slow health check fail tests on a loaded machine, not on a bug."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from hypothesis import HealthCheck, settings

from fencecheck.plugin.registry import ENV_PLUGINS
from fencecheck.plugin.specs import ENV_SYSTEM
from fencecheck.suites import hypothesis_profiles


def test_the_untimed_profile_is_the_default_less_its_time_limits():
    untimed = settings.get_profile(hypothesis_profiles.UNTIMED)
    default = settings.get_profile("default")
    assert untimed.deadline is None and default.deadline is not None
    assert HealthCheck.too_slow in untimed.suppress_health_check
    assert untimed.max_examples == default.max_examples


def test_a_pytest_run_without_a_profile_has_no_deadline(tmp_path):
    """A real pytest session with no --hypothesis-profile and no FENCECHECK_PROFILE: a @given test's example
    that takes 300 ms (longer than Hypothesis's default deadline) passes."""
    test = tmp_path / "test_slow_example.py"
    test.write_text(textwrap.dedent("""
        import time
        from hypothesis import given, settings, strategies as st

        def test_deadline_is_off():
            assert settings.default.deadline is None

        @given(st.integers())
        @settings(max_examples=2)
        def test_slow(n):
            time.sleep(0.3)  # the slow example under test, not synchronisation
    """))
    # Nothing of the outer run's selection: a profile, or a plug-in registered from a path this run cannot import.
    outer = (hypothesis_profiles.ENV_PROFILE, ENV_PLUGINS, ENV_SYSTEM)
    env_free = {k: v for k, v in os.environ.items() if k not in outer}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider", "-p",
         "fencecheck.suites.pytest_plugin",
         "--rootdir", str(tmp_path)],
        capture_output=True, text=True, env=env_free, cwd=tmp_path, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout


def test_registering_again_after_loading_a_profile_keeps_untimed_the_default():
    """The gate loads `gate` and registers the profiles again; the untimed profile must not inherit it."""
    in_force = settings.get_current_profile_name()
    try:
        settings.load_profile("gate")
        hypothesis_profiles.register_profiles()
        untimed = settings.get_profile(hypothesis_profiles.UNTIMED)
        assert untimed.max_examples == settings.get_profile("default").max_examples
        assert untimed.derandomize is False
    finally:
        settings.load_profile(in_force)
