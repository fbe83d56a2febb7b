"""The built-in systems, one folder each: `journal/`, `lantern/`, `gateway/`.

Each folder's `plugin.py` builds that system's `SystemPlugin`, beside what only that system needs (its codec,
its parallel programs, its structural invariants). The registry (`fencecheck.plugin.registry`) names them as
strings and the core never imports them, so these folders are the only place in fencecheck/ that knows a
system. A system from outside has the same shape in its own package (examples/cas_register/).
"""
