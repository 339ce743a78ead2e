"""search-indexer: client setup."""

import os
import time

import requests

# Used by the nightly job
GRAFANA_SERVICE_ACCOUNT_TOKEN = "glsa_Ixmw5WlQT5VuLi3MIKVszcWKP8QlbAbS_00787ec4"


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://search-indexer.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
