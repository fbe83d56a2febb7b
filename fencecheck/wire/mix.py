"""A seeded fault mix for races and parallel programs (issue 15, point 3): each caller's wire plan, drawn.

`FaultMix(seed).plan_for(lane)` is the fault plan of one caller's lane (`fencecheck.wire.lanes`), drawn from
`random.Random(f"{seed}/{lane}")` (a string seed is hashed with SHA-512: the same plan in every process and
run). Each lane draws, independently, at most one fault per method, always on that method's first call of
the lane, so a caller's whole-call retry runs clean and the run's definite share stays what the suites require
(`fencecheck.checker.definite`); what the faults exercise is the implementation's and its client library's own
handling of them, and the checker's handling of the indefinite answers they leave:

- Commit: `fail_response(UNAVAILABLE)` (the client's gapic retry meets a closed transaction) or
  `fail_response(DEADLINE_EXCEEDED)` (no retry): applied, its answer lost, indefinite; or a `delay`: definite;
- BeginTransaction: `reject(UNAVAILABLE)`: the client's gapic retry, definite;
- BatchGetDocuments: `fail_response(UNAVAILABLE)` (retried by the client) or `cut_stream()` after the first
  response: definite, or the implementation's unavailable answer;
- RunQuery: `reject(UNAVAILABLE)`: the client's gapic retry, definite.

Not in the mix, and why (google-cloud-firestore 2.34, `docs/wire-faults.md`): a RunQuery `cut_stream` makes the
Python client raise `AttributeError` (its bug, no Firestore error: the reference would rightly let it escape);
a BeginTransaction refused with a code no layer retries ends in the client's own `ValueError` without a cause;
a dropped response waits for the client's deadline (60 s).
"""

from __future__ import annotations

import random

import attrs
import grpc

from fencecheck.errors import UsageError
from fencecheck.wire.faults import Fault, FaultPlan, cut_stream, delay, fail_response, on, reject

ENV = "FENCECHECK_WIRE_FAULTS"
OPTION = "--wire-faults"
DEFAULT_SEED = 1

COMMIT_LOST = fail_response(grpc.StatusCode.UNAVAILABLE, "commit applied, its answer lost by the fault mix")
COMMIT_DEADLINE = fail_response(grpc.StatusCode.DEADLINE_EXCEEDED, "commit applied, its answer timed out (fault mix)")
UNAVAILABLE_BEFORE = reject(grpc.StatusCode.UNAVAILABLE, "refused by the fault mix before forwarding")
READ_LOST = fail_response(grpc.StatusCode.UNAVAILABLE, "read answer lost by the fault mix")
READ_CUT = cut_stream(grpc.StatusCode.UNAVAILABLE, "read stream cut by the fault mix")

# Per method: the chance that a lane's first call of it is faulted, and the faults drawn from (evenly).
RATES: dict[str, float] = {"Commit": 0.35, "BeginTransaction": 0.15, "BatchGetDocuments": 0.2, "RunQuery": 0.2}


def _faults(method: str, rng: random.Random) -> tuple[Fault, ...]:
    if method == "Commit":
        return (COMMIT_LOST, COMMIT_DEADLINE, delay(round(rng.uniform(0.01, 0.08), 3)))
    if method == "BatchGetDocuments":
        return (READ_LOST, READ_CUT)
    return (UNAVAILABLE_BEFORE,)


def _seed(value: object) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
        raise UsageError(f"a fault mix's seed is an int or a non-empty string, got {value!r}")
    return str(value)


@attrs.frozen
class FaultMix:
    """The mix of one run (see the module doc). `seed` is recorded with the run's results."""

    seed: str = attrs.field(converter=_seed)

    def derive(self, name: str) -> FaultMix:
        """The mix of one contest or repetition of this run (`name`: its scenario and repeat), so two runs of
        one suite draw different plans and each is repeated by its recorded seed."""
        return FaultMix(f"{self.seed}/{name}")

    def plan_for(self, lane: str) -> FaultPlan:
        rng = random.Random(f"{self.seed}/{lane}")
        rules = []
        for method, rate in RATES.items():
            hit = rng.random() < rate
            choices = _faults(method, rng)
            fault = choices[rng.randrange(len(choices))]
            if hit:
                rules.append(on(method, fault))
        return FaultPlan(tuple(rules))


def mix_from(value: str | None) -> FaultMix | None:
    """The `--wire-faults` / `$FENCECHECK_WIRE_FAULTS` value as a mix: off (unset, "", "off", "0": None), "on"
    (seed `DEFAULT_SEED`), or a seed (any other word or number)."""
    text = (value or "").strip()
    if text.lower() in ("", "off", "0", "no", "false"):
        return None
    if text.lower() in ("on", "1", "yes", "true"):
        return FaultMix(DEFAULT_SEED)
    if not text.replace("-", "").replace("_", "").isalnum():
        raise UsageError(f"{ENV} / {OPTION}: expected off, on or a seed (letters, digits, - and _), got a value "
                         "of another form")
    return FaultMix(text)
