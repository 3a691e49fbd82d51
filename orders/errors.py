"""What the batch service refuses, in the domain's words; the API maps each to its 409."""

from __future__ import annotations


class BatchRefused(Exception):
    """A batch that is not processed: nothing was written. `code` is its wire code."""

    code = "BATCH_REFUSED"
    message = "The batch was refused."

    def __str__(self) -> str:
        return self.message


class IdempotencyKeyReused(BatchRefused):
    code = "IDEMPOTENCY_KEY_REUSED"
    message = "This Idempotency-Key was already used with a different body."


class ClientBatchIdReused(BatchRefused):
    code = "CLIENT_BATCH_ID_REUSED"
    message = "This client_batch_id was already used with a different body."
