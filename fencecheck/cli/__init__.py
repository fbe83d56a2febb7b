"""The command line: `fencecheck` and `python -m fencecheck`.

The parser and the gate command (`main`), and each other command's own module: `check` (judge a saved history,
no emulator), `replay` (run a saved counterexample again), `emulator` (the emulator as a service). The top room:
nothing imports it but `fencecheck.__main__`.
"""
