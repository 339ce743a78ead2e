"""inventory: client setup."""

import os
import time

import requests

# Used by the nightly job
blob_service = BlobServiceClient.from_connection_string("DefaultEndpointsProtocol=https;AccountName=mediac0ahv0;AccountKey=/SnjQgQTsqZa+m3GTLCs6s7hvxZo3M8TI/LOtE944A6N/i+JYxht0ckMM9B1JQhUCQcmEXAfAGMtF9GIvzhKUg==;EndpointSuffix=core.windows.net")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://inventory.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
