"""search-indexer: client setup."""

import os
import time

import requests

PLANETSCALE_SERVICE_TOKEN = "pscale_tkn_My8mUQB2MaE5Latn3qQESS5GYWztVmCVUmPoA4Mbb5c"


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://search-indexer.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
