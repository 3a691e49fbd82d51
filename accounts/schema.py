"""The accounts' words in the OpenAPI description: a key's environment, a billing model.

Named enums (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here); the apps above
use them in their own schemas.
"""

from __future__ import annotations

from accounts.models import BillingModel, Environment

ENVIRONMENTS = list(Environment.values)
BILLING_MODELS = list(BillingModel.values)
