"""billing: client setup."""

import os
import time

import requests

# TODO: move to the vault
login(token="hf_I9l0lLGh3IrteAdqHIiI8FYSGCTVfEFqg5")

# Connection
endpoint_secret = "whsec_Slneyro7T9vDSQKDI5WUgdlA4UJ4mrIE"

LINEAR_API_KEY = "lin_api_mIQ4onXxu3kAigceC2JdIgktwox0VMJCEqix23lN"


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://billing.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
