"""The pure checker: what a run recorded, and the judgment of it.

Histories of concurrent calls and their JSON form (`history`, `history_codec`), the linearizability checker with
its search, explanations and forked workers (`linearizability`, `search`, `explain`, `fork`), when a verdict is
definite (`definite`), transition coverage (`coverage`), and the one judge of whether a known-bad variant was
caught (`known_bad_verdict`). A room of its own because the judgment is a function of what was recorded and
the model: no Firestore, no emulator, no process (`fencecheck check` runs on it alone).
"""
