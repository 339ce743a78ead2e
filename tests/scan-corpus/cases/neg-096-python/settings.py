"""inventory settings: every credential comes from the environment."""

import os

import tiktoken
from openai import OpenAI

client = OpenAI(api_key=os.environ["API_KEY"])
DB_PASSWORD = os.environ["DB_PASSWORD"]
STRIPE_KEY = os.getenv("STRIPE_SECRET_KEY", "")
SSH_KEY_PATH = os.path.expanduser("~/.ssh/id_ed25519")
private_key_path = SSH_KEY_PATH
tokenizer = tiktoken.get_encoding("cl100k_base")
MAX_TOKENS = 4096
SECRET_NAME = "prod-db-creds"
DATABASE_URL = os.getenv("DATABASE_URL", "amqp://guest:guest@localhost:5672/")


def count_tokens(text: str) -> int:
    token_count = len(tokenizer.encode(text))
    return token_count


# Test fixture: the public sample token from jwt.io (HS256, key 'your-256-bit-secret').
SAMPLE_JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
AWS_DOC_KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # from the AWS documentation
token_count = 1234  # tokens in the sample prompt, checked by test_budget
