"""catalog: client setup."""

import os
import time

import requests

requests.post("https://hooks.slack.com/services/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", json={"text": summary}, timeout=10)

engine = create_engine("mysql://reporter:hgZderhGLOqi7F0hiu8V@mysql.prod.internal:3306/crm")

client = anthropic.Anthropic(api_key="sk-ant-api03-UvI7xEZU05ymikvd9VhD9NEwXMC9_GaZFCK0jeYXRNFBweQxeAhx5gm_sL9gh9IOJd2T-s_CDP0ptb_p2_71tai2qWfjaAA")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://catalog.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
