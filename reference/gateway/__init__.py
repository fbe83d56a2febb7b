"""The gateway journal's reference implementation on google-cloud-firestore (docs/gateway-contract.md).

Ten keyword-only operations; outputs are frozen `GatewayOutput`s (`to_json()` in the contract's key order),
errors one immutable `GatewayError` with a fixed code. The retry discipline is the command journal's runner.
Nothing here imports `model/`: the model is what this is checked against
(tests/systems/gateway/test_gateway_reference.py).
"""

from .api import (
    apply_settlement_evidence,
    begin_gateway_journal,
    claim_consume_intent,
    close_submission_window,
    get_gateway_journal,
    record_consume_response,
    record_manual_terminal,
    report_provider_submission,
    take_provider_intent,
    take_reconcile_lease,
)
from .errors import ERROR_CODES, GatewayError
from .outputs import GatewayOutput
from .runner import AttemptLog

OPERATIONS = (
    "begin_gateway_journal",
    "get_gateway_journal",
    "claim_consume_intent",
    "record_consume_response",
    "take_provider_intent",
    "report_provider_submission",
    "take_reconcile_lease",
    "apply_settlement_evidence",
    "record_manual_terminal",
    "close_submission_window",
)

__all__ = [
    "apply_settlement_evidence",
    "begin_gateway_journal",
    "claim_consume_intent",
    "close_submission_window",
    "get_gateway_journal",
    "record_consume_response",
    "record_manual_terminal",
    "report_provider_submission",
    "take_provider_intent",
    "take_reconcile_lease",
    "ERROR_CODES",
    "OPERATIONS",
    "AttemptLog",
    "GatewayError",
    "GatewayOutput",
]
