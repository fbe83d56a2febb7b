"""The plug-in interface a system implements, and how the harness finds a system.

`records`: `SystemPlugin` and its records (model, partitions, implementations, codec), re-exported here, so a plug-in
writes `from fencecheck.plugin import SystemPlugin`; `registry`: the systems by name (the built-in ones,
entry points of `fencecheck.systems`, `--plugin`); `specs`: which implementation $FENCECHECK_SYSTEM or `--system`
names; `suite_parts`: the suites' optional parts a system declares. It is one room because everything the core
knows of a system comes through it, and nothing here imports a system: the registry names them as strings.
"""

from fencecheck.plugin.records import (
    CORE_HISTORY_KEYS,
    NAME_PATTERN,
    PROJECT,
    RECORDS,
    BrowserBoundary,
    Codec,
    Documents,
    Implementations,
    Model,
    ModelResult,
    MutationTargets,
    Observed,
    Partitions,
    SuiteParts,
    SystemPlugin,
    TransitionRow,
    UndeclaredError,
    accepts_attempt_log,
    code_attribute,
    contract_error_code,
    definition_problems,
    exact_answer_matches,
    exact_json,
    impl_output_json,
    load_part,
)

__all__ = [
    "CORE_HISTORY_KEYS",
    "NAME_PATTERN",
    "PROJECT",
    "RECORDS",
    "BrowserBoundary",
    "Codec",
    "Documents",
    "Implementations",
    "Model",
    "ModelResult",
    "Observed",
    "Partitions",
    "MutationTargets",
    "SuiteParts",
    "SystemPlugin",
    "TransitionRow",
    "UndeclaredError",
    "accepts_attempt_log",
    "code_attribute",
    "contract_error_code",
    "definition_problems",
    "exact_answer_matches",
    "exact_json",
    "impl_output_json",
    "load_part",
]
