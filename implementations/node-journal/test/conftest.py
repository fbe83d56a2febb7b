"""The Node journal's tests, collected by ``./run tests`` (pyproject's ``testpaths``), which installs Node and runs
``npm ci`` here first. Without ``node`` or ``node_modules`` the tests fail with the command that installs them,
never skip. They import the shared test helpers by their full names (``tests.systems.journal.support``,
``stateful_tests``): the repository's root is on ``sys.path`` by its own conftest.py.
"""
