"""A SystemPlugin refuses, when it is built, a field that cannot work, naming it as `record.field`
(fencecheck.plugin), and asks for few fields: the rest have defaults or are derived."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from fencecheck.errors import PluginDefinitionError
from fencecheck.plugin.records import RECORDS, Codec, SystemPlugin
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin
from tests.register_plugin import REGISTER, Read, Write


@attrs.frozen
class Row:
    id: object
    reachable: object = True


def changed(base: SystemPlugin, **changes: Any) -> SystemPlugin:
    """`base` with fields changed by dotted name: `name=...`, or `model__step=...` for `model.step`."""
    records: dict[str, dict[str, Any]] = {}
    own = {}
    for key, value in changes.items():
        record, _, field = key.partition("__")
        if field:
            records.setdefault(record, {})[field] = value
        else:
            own[key] = value
    for record, fields in records.items():
        own[record] = attrs.evolve(getattr(base, record), **fields)
    return attrs.evolve(base, **own)


@pytest.mark.parametrize(("change", "message"), [
    ({"name": "Register"}, "name: expected lowercase letters"),
    ({"name": ""}, "name: expected lowercase letters"),
    ({"name": "cas:register"}, "name: expected lowercase letters"),
    ({"name": "-x"}, "name: expected lowercase letters"),
    ({"model__step": "not a function"}, "model.step: expected a callable, got str"),
    ({"model__step": 3}, "model.step: expected a callable, got int"),
    ({"implementations__read_set": 3}, "implementations.read_set: expected a callable or None, got int"),
    ({"partitions__partition_noun": ""}, "partitions.partition_noun: expected a non-empty str"),
    ({"implementations__unavailable_code": None}, "implementations.unavailable_code: expected a non-empty str"),
    ({"model__transitions": (Row("a"), Row("a"))}, "model.transitions: row ids must be unique; repeated: ['a']"),
    ({"model__transitions": (Row(1),)}, "model.transitions: expected rows with a str `id` and a bool `reachable`"),
    ({"model__transitions": (Row("a", reachable=1),)}, "model.transitions: expected rows with a str `id` and a bool"),
    ({"codec__history_header_keys": ("calls", "mine")}, "codec.history_header_keys: ['calls'] are the core's own"),
    ({"codec__history_header_keys": ["mine"]}, "codec.history_header_keys: expected a tuple of str"),
    ({"implementations__spec_prefixes": ("",)}, "implementations.spec_prefixes: expected a tuple of non-empty str"),
    ({"codec__ops_from_json": None}, "codec.ops_to_json, codec.ops_from_json: give both"),
    ({"codec": Codec()}, "codec.operations: expected type name -> attrs operation class"),
    ({"codec": Codec(operations={"read": dict})}, "codec.operations: 'read': expected a non-empty str naming an attrs"),
    ({"implementations__invoke": None}, "implementations.operation, implementations.invoke: give exactly one (the "
                                         "operation table, or a call of the system's own), not neither"),
    ({"implementations__operation": lambda op: ("write", {})}, "implementations.operation, implementations.invoke: "
                                                               "give exactly one (the operation table, or a call of "
                                                               "the system's own), not both"),
    ({"implementations__operation": lambda op: ("write", {}), "implementations__invoke": None,
      "implementations__clockless": ["write"]}, "implementations.clockless: expected a tuple of function names"),
    ({"implementations__function": "write"}, "implementations.function: expected a callable, got str"),
    ({"model": "a model"}, "model: expected a fencecheck.plugin.Model, got str"),
    ({"partitions": None}, "partitions: expected a fencecheck.plugin.Partitions, got NoneType"),
])
def test_a_field_that_cannot_work_is_refused_by_name(change, message):
    with pytest.raises(PluginDefinitionError) as refused:
        changed(REGISTER, **change)
    assert message in str(refused.value)
    assert str(refused.value).startswith(f"SystemPlugin {change.get('name', 'register')!r}: ")


def test_every_problem_is_named_at_once():
    with pytest.raises(PluginDefinitionError) as refused:
        changed(REGISTER, model__step=None, model__describe_op=None, partitions__partition_noun="")
    assert [part.split(":")[0] for part in str(refused.value).split(": ", 1)[1].split("; ")] == [
        "model.step", "model.describe_op", "partitions.partition_noun"]


@pytest.mark.parametrize("name", SYSTEM_NAMES)
def test_every_registered_plugin_builds(name):
    assert attrs.evolve(plugin(name)) == plugin(name)


def _required(cls: type) -> list[str]:
    return [field.name for field in attrs.fields(cls) if field.default is attrs.NOTHING]


def test_a_plugin_asks_for_at_most_twelve_fields():
    """Counted over SystemPlugin and the records it requires (a record with a default, such as `partitions`,
    adds none: a system that leaves it out never writes its fields)."""
    required = [f"{name}" for name in _required(SystemPlugin)]
    for record in _required(SystemPlugin):
        if record in RECORDS:
            required += [f"{record}.{name}" for name in _required(RECORDS[record])]
    assert required == ["name", "model", "implementations", "codec", "model.initial_state", "model.step",
                        "model.transitions", "model.documents", "implementations.resolve",
                        "implementations.unavailable_code"]
    assert len(required) <= 12


def test_a_record_field_reads_through_the_plugin():
    assert REGISTER.step is REGISTER.model.step
    assert REGISTER.documents_of is REGISTER.model.documents
    assert REGISTER.partition_noun == REGISTER.partitions.partition_noun
    assert REGISTER.history_header_keys == REGISTER.codec.history_header_keys
    with pytest.raises(AttributeError):
        REGISTER.no_such_field  # noqa: B018 (the read is the test)


def test_the_reference_is_what_resolve_answers_for_no_spec():
    for name in SYSTEM_NAMES:
        assert plugin(name).reference is plugin(name).implementations.resolve(None)


def _table(op: Write | Read) -> tuple[str, dict[str, Any]]:
    if isinstance(op, Write):
        return "write_register", {"key": op.key, "value": op.value}
    return "read_register", {"key": op.key}


def test_invoke_is_derived_from_the_operation_table():
    """The table's function of `impl.api`, handed db, the clock unless it is clockless, the attempt log only when
    it takes one, and the table's arguments: nothing else."""
    seen = []

    def write_register(*, db, clock, key, value, attempt_log=None):
        seen.append(("write_register", db, clock, key, value, attempt_log))
        return {"outcome": "written"}

    def read_register(*, db, key):
        seen.append(("read_register", db, key))
        return {"outcome": "read"}

    system = changed(REGISTER, implementations__invoke=None, implementations__operation=_table,
                     implementations__clockless=("read_register",))
    impl = SimpleNamespace(api=SimpleNamespace(write_register=write_register, read_register=read_register))

    def clock():
        raise AssertionError("the harness never reads the clock it hands over")

    assert system.invoke(impl, "db", Write("x", 1), clock, "log") == {"outcome": "written"}
    assert system.invoke(impl, "db", Read("x"), clock, "log") == {"outcome": "read"}
    assert seen == [("write_register", "db", clock, "x", 1, "log"), ("read_register", "db", "x")]
    with pytest.raises(TypeError):  # a function that is handed the clock it does not take is a crash, never a pass
        changed(system, implementations__clockless=()).invoke(impl, "db", Read("x"), clock)
