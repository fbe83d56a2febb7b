"""What pytest and the suites plug into.

The pytest plug-in with the emulator fixtures and options (`pytest_plugin`, registered by the root conftest.py),
the Hypothesis profiles (`hypothesis_profiles`) and the progress lines a long run prints (`progress`,
`pytest_progress`). One room for the suites' settings and fixtures, below the runners, which read the same
profiles.
"""
