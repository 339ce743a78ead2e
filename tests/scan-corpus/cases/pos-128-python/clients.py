"""search-indexer: client setup."""

import os
import time

import requests

# Provider client
headers = {"Authorization": "Bearer Vn0F2b2hUPqpsP5DwpaQnaAJy6gACJQo0LLFQKZS", "Accept": "application/json"}

sg = SendGridAPIClient("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")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://search-indexer.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
