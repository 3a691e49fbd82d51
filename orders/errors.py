"""What the batch service refuses, in the domain's words; the API gives each its HTTP status
(orders/api.REFUSAL_STATUS)."""

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


class QuoteNotFound(BatchRefused):
    code = "NOT_FOUND"
    message = "No such quote."


class QuoteExpired(BatchRefused):
    code = "QUOTE_EXPIRED"
    message = "This quote has expired: ask for a new one."


class QuoteUsed(BatchRefused):
    # Not QUOTE_EXPIRED: the quote is still valid for the batch it backs (docs/api.md).
    code = "QUOTE_USED"
    message = "This quote already backs another batch: ask for a new one."


class QuoteMismatch(BatchRefused):
    code = "QUOTE_MISMATCH"
    message = "The body is not the one this quote was made for."
