"""notifier: settings."""

import os
import time

import requests

# Used by the nightly job
SECRET_KEY = '$u(1i3dizfuj9n@nr6rfqlqo(=0w&(k__sm0_4r(oq&c+msd&r'

# TODO: move to the vault
resp = requests.get(url, cookies={"session": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c3JfaEJnRDNqb2dUQ2NYSlgiLCJuYW1lIjoiQWlzaGEgS2FyaW0iLCJpYXQiOjE3NjcxNDAyNTAsImV4cCI6MTc2NzE0Mzg1MCwicm9sZSI6ImFkbWluIn0.IRIOIoxVkoEQRSW1A7Gaa5FV9ahBy8ao5lz8ee-rvnG"}, timeout=10)

client = Groq(api_key="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")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://notifier.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
