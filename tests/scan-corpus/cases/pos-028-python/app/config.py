"""notifier: integration helpers."""

import os
import time

import requests

# TODO: move to the vault
blob = BlobClient.from_blob_url("https://logs2bsvr4.blob.core.windows.net/backups/invoices/2026-02.zip?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig=Fzn3ZLjaRwBsmIbsni9LcS7d5wCjk4PDmL1f%2F2ETR0Y%3D")

notion = Client(auth="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")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://notifier.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
