"""`fencecheck gate`'s own machinery.

The suites' processes and what a signal to the gate does to them (`process`), and the replays that confirm a
known-bad catch (`replay`). A room of its own so the gate's process handling reads apart from the command line
that starts it (`fencecheck.cli.main`).
"""
