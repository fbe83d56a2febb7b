"""What drives a system through the shells and judges it with the checker.

The lockstep runner (`lockstep`) and the counterexample files it writes (`counterexamples`); the race contests,
their result files, their model-only simulation and their replay (`contest`, `contest_results`,
`contest_simulation`, `replay_contest`); the browser rules probe (`rules_probe`). Parallel programs are their own
room beside it (`fencecheck.parallel`). Each takes a plug-in as an argument; none imports a system.
"""
