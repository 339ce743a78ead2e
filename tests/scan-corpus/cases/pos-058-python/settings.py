"""inventory: integration helpers."""

import os
import time

import requests

# Provider client
client = hvac.Client(url="https://vault.internal.io:8200", token="hvs.GRwJxG8oLsQIaHNKMVI7nP8ouvVQiMkj5_fyL9fqyUr16oFOi3QrjiT")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://inventory.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
