"""A SystemPlugin refuses, when it is built, a field that cannot work, naming it (fencecheck.plugin)."""

from __future__ import annotations

import attrs
import pytest

from fencecheck.errors import PluginDefinitionError
from fencecheck.plugins import SYSTEM_NAMES, plugin
from tests.register_plugin import REGISTER


@attrs.frozen
class Row:
    id: object
    reachable: object = True


@pytest.mark.parametrize(("change", "message"), [
    ({"name": "Register"}, "name: expected lowercase letters"),
    ({"name": ""}, "name: expected lowercase letters"),
    ({"name": "cas:register"}, "name: expected lowercase letters"),
    ({"name": "-x"}, "name: expected lowercase letters"),
    ({"step": "not a function"}, "step: expected a callable, got str"),
    ({"read_set": 3}, "read_set: expected a callable or None, got int"),
    ({"partition_noun": ""}, "partition_noun: expected a non-empty str"),
    ({"unavailable_code": None}, "unavailable_code: expected a non-empty str"),
    ({"transitions": (Row("a"), Row("a"))}, "transitions: row ids must be unique; repeated: ['a']"),
    ({"transitions": (Row(1),)}, "transitions: expected rows with a str `id` and a bool `reachable`"),
    ({"transitions": (Row("a", reachable=1),)}, "transitions: expected rows with a str `id` and a bool"),
    ({"history_header_keys": ("calls", "mine")}, "history_header_keys: ['calls'] are the core's own keys"),
    ({"history_header_keys": ["mine"]}, "history_header_keys: expected a tuple of str"),
    ({"spec_prefixes": ("",)}, "spec_prefixes: expected a tuple of non-empty str"),
])
def test_a_field_that_cannot_work_is_refused_by_name(change, message):
    with pytest.raises(PluginDefinitionError) as refused:
        attrs.evolve(REGISTER, **change)
    assert message in str(refused.value)
    assert str(refused.value).startswith(f"SystemPlugin {change.get('name', 'register')!r}: ")


def test_every_problem_is_named_at_once():
    with pytest.raises(PluginDefinitionError) as refused:
        attrs.evolve(REGISTER, step=None, describe_op=None, partition_noun="")
    assert [part.split(":")[0] for part in str(refused.value).split(": ", 1)[1].split("; ")] == [
        "step", "describe_op", "partition_noun"]


@pytest.mark.parametrize("name", SYSTEM_NAMES)
def test_every_registered_plugin_builds(name):
    assert attrs.evolve(plugin(name)) == plugin(name)
