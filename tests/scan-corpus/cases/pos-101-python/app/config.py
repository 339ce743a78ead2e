"""ledger: integration helpers."""

import os
import time

import requests

# Connection
client = OpenAI(api_key="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", base_url="https://api.perplexity.ai")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://ledger.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
