"""reports: integration helpers."""

import os
import time

import requests

# Used by the nightly job
credential = ClientSecretCredential(tenant_id, client_id, "B8k7Q~8_Lo.1Isz_nY3NiE8k.ENm3kouBYxvP1AW")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://reports.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
