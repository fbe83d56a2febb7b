"""The gateway's known-bad catalogue (known_bad/gateway) without an emulator: every variant loads as its own
copy of reference/gateway with its BUG in place (the dispatch table bound to the mutated decision), resolves by
its spec through the plug-in, and leaves the real reference untouched."""

from __future__ import annotations

import inspect

import pytest

import reference.gateway
from fencecheck.errors import SystemNotFoundError
from fencecheck.systems.gateway.plugin import GATEWAY
from known_bad.gateway import VARIANTS, variant
from known_bad.loader import copy_modules
from model.gateway import TRANSITION_IDS


@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_each_variant_is_an_isolated_copy_with_its_bug(name):
    v = variant(name)
    package = v.build()
    assert package is not reference.gateway and package.GatewayError is not reference.gateway.GatewayError
    modules = copy_modules(package)
    for edit in v.edits:
        module, _, function = edit.target.rpartition(".")
        assert "BUG" in inspect.getsource(getattr(modules[module], function)), edit.target
        assert "BUG" not in inspect.getsource(getattr(getattr(reference.gateway, module), function))
    decide = modules["decide"]
    assert all(fn is getattr(decide, fn.__name__) for fn in decide._DECIDE.values())  # the mutated ones
    assert v.rule.split(":")[0] in TRANSITION_IDS
    resolved = GATEWAY.resolve(v.system_spec)
    assert resolved.api is package and resolved.name == f"known_bad.gateway:{name}"


def test_an_unknown_variant_is_a_clear_error():
    with pytest.raises(SystemNotFoundError, match="no known-bad gateway variant"):
        GATEWAY.resolve("known_bad.gateway:no-such-variant")


def test_the_catalogue_has_ten_sequential_variants_the_machine_runs_and_names_its_concurrent_one():
    # Moved here from the machine's catalogue test (stateful_tests/test_known_bad.py runs every system's split):
    # the gateway's counts, which no emulator is needed to check.
    from tests.systems.gateway.machine import KNOWN_BAD

    sequential = tuple(v.name for v in VARIANTS if not v.concurrent)
    assert len(sequential) >= 10 and len(KNOWN_BAD.run) >= 8
    assert KNOWN_BAD.concurrent == ("claim_outside_the_transaction",)
    assert all(GATEWAY.resolve(variant(name).system_spec).api is not GATEWAY.reference.api for name in sequential)
