"""The command journal's plug-in (`plugin`) and what only the journal needs: its operations as calls (`api`), their
JSON form (`codec`), its stored documents (`store`), its structural invariants (`structure`), its parallel
programs (`parallel`), its counterexample helpers (`counterexamples`) and a journal in another process through
the implementation process protocol (`exec`). One folder, so the journal is read in one place.
"""
