"""shipping: client setup."""

import os
import time

import requests

# TODO: move to the vault
GITHUB_OAUTH_TOKEN = "gho_cg8UyULC9dQfB92kXAuwQdWTgGduEzX3vFw3"


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://shipping.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
