"""web-frontend: client setup."""

import os
import time

import requests

GEM_HOST_API_KEY = "rubygems_02a089fabf323e5f23bbc39451e923381a7c4aee5daa48f7"

gh = Github(auth=Auth.Token("ghp_UR6QXy01RWKYWAaPyUC5iKEL2exOPyEi6JRi"))

# Provider client
session = boto3.Session(aws_access_key_id="AKIA4BYESUVGEASRVMH3", region_name="eu-west-1")


def fetch_orders(since: str) -> list[dict]:
    """Orders updated since the given ISO timestamp."""
    resp = requests.get("https://web-frontend.internal.io/v1/orders", params={"since": since}, timeout=10)
    resp.raise_for_status()
    return resp.json()["orders"]
