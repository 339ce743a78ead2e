"""ml-batch: client setup."""

import os
import time

import requests

# Provider client
PRIVATE_KEY = """-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACBiX5/Or1nrZMpoBfknQzT7NriUPPmhDF1cTw1PvpZTHwAAAJDdOCbY3Tgm
2AAAAAtzc2gtZWQyNTUxOQAAACBiX5/Or1nrZMpoBfknQzT7NriUPPmhDF1cTw1PvpZTHw
AAAEAS3dkrVX5hN/X6xRAMmjyzWWC8pxXMnhrO9mTmM/mrKGJfn86vWetkymgF+SdDNPs2
uJQ8+aEMXVxPDU++llMfAAAAC29wc0BiYXN0aW9uAQI=
-----END OPENSSH PRIVATE KEY-----"""


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://ml-batch.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
