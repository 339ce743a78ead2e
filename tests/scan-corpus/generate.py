#!/usr/bin/env python3
"""Writes the labelled credential-scanner corpus: cases/ and labels.json beside this file.

Positive files hold freshly random credentials, at most one per line; each labelled line names
the rule the scanner must report there (1-based). Negative files hold only look-alikes that a
good scanner must pass: documented sample keys, x-placeholders, variable references, local
defaults, key-file paths, digests, certificates, public keys, masked values, prose.

Label convention: one credential, one rule per line. Where a specific rule and a loose one
(generic-secret, password-field, authorization-header, npmrc-auth, netrc-password) could both
describe a line (`GITHUB_TOKEN=ghp_...`, `//registry.npmjs.org/:_authToken=npm_...`), the label
is the specific rule and the loose one would be a false alarm.

Deterministic (random.Random(2640)), Python 3 stdlib only. Run: python3 tests/scan-corpus/generate.py
"""

import base64
import json
import random
import re
import shutil
import string
import sys
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
R = random.Random(2640)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
LET = UP + LO
AL = LET + DG
HX = "0123456789abcdef"
US = AL + "-_"
B64 = AL + "+/"
B32 = UP + "234567"
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

# Never inside a random part: words that mark a placeholder, and runs or sequences.
BANNED = ("example", "test", "sample", "dummy", "your", "xxx", "fake", "demo", "placeholder",
          "changeme", "secret", "token", "passw", "key", "redact", "mask", "null", "none")
USED = set()


def _bad(s):
    low = s.lower()
    if any(w in low for w in BANNED):
        return True
    for i in range(len(s) - 2):
        if s[i] == s[i + 1] == s[i + 2]:
            return True
    for i in range(len(s) - 3):
        a = s[i:i + 4].lower()
        if a.isdigit() or a.isalpha():
            steps = {ord(a[j + 1]) - ord(a[j]) for j in range(3)}
            if steps in ({1}, {-1}):
                return True
    return False


def rs(alpha, n, need=""):
    """n fresh random characters of alpha; need: d digit, l lower, u upper, a letter."""
    while True:
        s = "".join(R.choice(alpha) for _ in range(n))
        if "d" in need and not any(c.isdigit() for c in s):
            continue
        if "l" in need and not any(c.islower() for c in s):
            continue
        if "u" in need and not any(c.isupper() for c in s):
            continue
        if "a" in need and not any(c.isalpha() for c in s):
            continue
        if _bad(s) or s in USED:
            continue
        USED.add(s)
        return s


def rbytes(n):
    return bytes(R.getrandbits(8) for _ in range(n))


def b64(b):
    return base64.b64encode(b).decode()


def b64url(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def rb64(nbytes):
    """Standard base64 of fresh random bytes, clean of words and runs."""
    while True:
        s = b64(rbytes(nbytes))
        if not _bad(s.rstrip("=")) and s not in USED:
            USED.add(s)
            return s


pick = R.choice
rint = R.randint


def uuid4():
    h = rs(HX, 32, "da")
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{pick('89ab')}{h[17:20]}-{h[20:32]}"


# ---------------------------------------------------------------------------------------------
# Key material (random bodies behind realistic DER / wire-format prefixes)

def wrap(s, n=64):
    return [s[i:i + n] for i in range(0, len(s), n)]


def pem(label, der, width=64):
    return [f"-----BEGIN {label}-----"] + wrap(b64(der), width) + [f"-----END {label}-----"]


def rsa_key():
    return pem("RSA PRIVATE KEY", bytes.fromhex("308204a40201000282010100") + rbytes(1180))


def pkcs8_key():
    prefix = "308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100"
    return pem("PRIVATE KEY", bytes.fromhex(prefix) + rbytes(1180))


def ec_key():
    der = (bytes.fromhex("30770201010420") + rbytes(32)
           + bytes.fromhex("a00a06082a8648ce3d030107a14403420004") + rbytes(64))
    return pem("EC PRIVATE KEY", der)


def ssh_string(b):
    return len(b).to_bytes(4, "big") + b


def openssh_key():
    pub = rbytes(32)
    blob = ssh_string(b"ssh-ed25519") + ssh_string(pub)
    check = rbytes(4)
    priv = (check + check + ssh_string(b"ssh-ed25519") + ssh_string(pub)
            + ssh_string(rbytes(32) + pub) + ssh_string(pick([b"deploy@ci", b"ops@bastion", b"root@build-7"])))
    priv += bytes(range(1, 1 + (-len(priv)) % 8))
    raw = (b"openssh-key-v1\x00" + ssh_string(b"none") + ssh_string(b"none") + ssh_string(b"")
           + (1).to_bytes(4, "big") + ssh_string(blob) + ssh_string(priv))
    return pem("OPENSSH PRIVATE KEY", raw, 70)


def cert_pem():
    der = (bytes.fromhex("308202") + rbytes(1) + bytes.fromhex("308201") + rbytes(1)
           + bytes.fromhex("a00302010202") + bytes([0x14]) + rbytes(20)
           + bytes.fromhex("300d06092a864886f70d01010b0500") + rbytes(470))
    return pem("CERTIFICATE", der)


def pubkey_pem():
    der = (bytes.fromhex("30820122300d06092a864886f70d01010105000382010f003082010a0282010100")
           + rbytes(256) + bytes.fromhex("0203010001"))
    return pem("PUBLIC KEY", der)


def ssh_pub(comment):
    return "ssh-ed25519 " + b64(ssh_string(b"ssh-ed25519") + ssh_string(rbytes(32))) + " " + comment


def b64_of_lines(lines):
    return b64(("\n".join(lines) + "\n").encode())


# ---------------------------------------------------------------------------------------------
# Scenery: services, hosts, people, prose

SVCS = ["payments-api", "orders-worker", "billing", "notifier", "search-indexer", "auth-gateway",
        "reports", "inventory", "web-frontend", "ml-batch", "ledger", "shipping", "catalog"]
TASKS = ["rotating the database connection", "bootstrapping a new environment",
         "wiring the Slack alerts", "publishing a release", "restoring a nightly backup",
         "setting up local development", "deploying to staging", "onboarding a new region",
         "migrating the job queue", "debugging a failed deploy", "cutting over to the new cluster"]
PEOPLE = ["Maya Lindqvist", "Tomasz Nowak", "Aisha Karim", "Diego Alvarez", "Priya Raman",
          "Lukas Becker", "Chen Wei", "Olivia Hart", "Kwame Mensah", "Sofia Rossi", "Ines Duarte"]
NS = ["prod", "staging", "payments", "platform", "data"]
ORGS = ["acme", "northwind", "globex", "initech", "umbrella-labs", "hooli"]

SENTENCES = [
    "This page walks through {task} for the {svc} service.",
    "Run the commands from the repository root; they assume the `{ns}` namespace is selected.",
    "The CI job reads these values on every run, so keep them in step with the deployment manifest.",
    "{person} set this up during the March migration and it has run unattended since.",
    "If a step fails, check the job log first: most failures are a missing permission, not a code bug.",
    "The service starts in under ten seconds; anything slower usually means the cache is cold.",
    "Everything below was copied from a working terminal session, so the output is real.",
    "We keep this file next to the code so that the on-call engineer does not have to hunt for it.",
    "The staging cluster mirrors production except for the node count and the retention window.",
    "After the change, watch the error-rate panel for fifteen minutes before closing the ticket.",
    "Nightly jobs run at 02:00 UTC and finish well before the first European traffic arrives.",
    "Ask in #platform-help if the numbers look off; someone there owns each of these integrations.",
    "The worker retries three times with exponential backoff before it parks a message.",
    "Releases are tagged from `main`; hotfix branches are cut from the last tag.",
    "The health endpoint returns 200 once migrations have finished and the queue is reachable.",
    "Logs ship to the central collector; keep them structured so the dashboards keep working.",
    "This configuration is loaded once at startup, so restart the pods after editing it.",
    "{person} reviewed the runbook last quarter and trimmed the steps nobody used.",
]


def fill(s, ctx):
    return s.format(**ctx)


def context():
    return {"svc": pick(SVCS), "task": pick(TASKS), "person": pick(PEOPLE), "ns": pick(NS),
            "org": pick(ORGS)}


def prose(ctx, n=None):
    n = n or rint(2, 3)
    return " ".join(fill(s, ctx) for s in R.sample(SENTENCES, n))


# ---------------------------------------------------------------------------------------------
# Quoting per syntax

def envq(v):
    if re.search(r"[\s$'\"#;&()*!`\\|<>]", v):
        return "'" + v + "'"
    return pick([v, v, '"' + v + '"'])


def shq(v):
    if re.search(r"[\s$'\"#;&()*!`\\|<>?\[\]{}~]", v):
        return "'" + v + "'"
    return v


def yq(v, force=False):
    if force or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_./+=-]*", v) or v.isdigit():
        return '"' + v + '"'
    return pick([v, '"' + v + '"'])


def camel(name):
    parts = name.lower().split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


# ---------------------------------------------------------------------------------------------
# Items: one credential (sometimes a pair, each on its own line) and the forms it can take.
# A form is a function (indent) -> (lines, [(index, rule)]).

KIND_FORM = {"env": "env", "gha": "yaml", "gitlab": "yaml", "k8s-secret": "yaml",
             "k8s-deploy": "k8senv", "json": "json", "python": "python", "js": "js"}


class Item:
    def __init__(self, rule, forms, kinds=None):
        self.rule = rule
        self.forms = forms
        if kinds is None:
            kinds = ["readme", "skill"]
            if "cmd" in forms or "export" in forms or "sh" in forms:
                kinds.append("shell")
            for kind, form in KIND_FORM.items():
                if form in forms:
                    kinds.append(kind)
            for extra in ("npmrc", "netrc", "kubeconfig"):
                if extra in forms:
                    kinds.append(extra)
        self.kinds = kinds

    def form(self, name, ind=""):
        return self.forms[name](ind)

    def md(self):
        """(fence language, lines, labels) for a Markdown fence."""
        if "md" in self.forms:
            return self.forms["md"]("")
        choices = [f for f in ("export", "cmd", "env", "python", "js", "yaml", "json") if f in self.forms]
        f = pick(choices)
        lines, labels = self.forms[f]("" if f not in ("yaml", "json") else "  ")
        if f == "export":
            return pick(["bash", "sh", "shell"]), lines, labels
        if f == "cmd":
            if R.random() < 0.4:
                return "console", ["$ " + lines[0]] + lines[1:], labels
            return "bash", lines, labels
        if f == "env":
            return pick(["dotenv", "ini", "", "bash"]), lines, labels
        if f == "python":
            return "python", lines, labels
        if f == "js":
            return pick(["js", "javascript", "ts"]), lines, labels
        if f == "yaml":
            return "yaml", ["env:"] + lines, [(i + 1, r) for i, r in labels]
        return "json", ["{"] + lines + ["}"], [(i + 1, r) for i, r in labels]

    def sh(self):
        """(lines, labels) in a shell transcript, commands prefixed with '$ '."""
        if "sh" in self.forms:
            return self.forms["sh"]("")
        choices = [f for f in ("cmd", "export") if f in self.forms]
        f = pick(choices)
        lines, labels = self.forms[f]("")
        return ["$ " + lines[0]] + lines[1:], labels

    def step(self, ind):
        """A CI script line (run: / script:) holding the credential, if the item has one."""
        return self.forms["step"](ind)


def one(rule, line_fn):
    return lambda ind="": ([ind + line_fn()], [(0, rule)])


def std(rule, value, name, jkey=None, py=None, js=None, cmd=None, only=None, extra=None):
    v = value
    forms = {
        "env": one(rule, lambda: f"{name}={envq(v)}"),
        "export": one(rule, lambda: f"export {name}={shq(v)}"),
        "yaml": one(rule, lambda: f"{name}: {yq(v)}"),
        "k8senv": lambda ind="": ([f"{ind}- name: {name}", f"{ind}  value: {yq(v, True)}"], [(1, rule)]),
        "python": one(rule, lambda: py.replace("{v}", v) if py else f'{name} = "{v}"'),
        "js": one(rule, lambda: js.replace("{v}", v) if js else f'const {camel(name)} = "{v}";'),
    }
    if jkey:
        forms["json"] = one(rule, lambda: f"{json.dumps(jkey)}: {json.dumps(v)}")
    if cmd:
        forms["cmd"] = one(rule, lambda: cmd.replace("{v}", v))
    if only:
        forms = {k: f for k, f in forms.items() if k in only}
    if extra:
        forms.update(extra)
    return Item(rule, forms)


# ---- value generators -----------------------------------------------------------------------

def v_pw_url():
    return rs(AL + "-_!", rint(12, 20), "dul")


def v_pw_plain():
    return rs(AL + "!@#%^-_.", rint(14, 22), "dul")


def v_pw_bare():
    return rs(AL + "-_.", rint(12, 20), "dul")


def v_pw_letters():
    return rs(LET, rint(10, 20), "ul")


def v_pw_star():
    while True:
        s = rs(AL + "*&#%!@", rint(10, 16), "dul")
        if "*" in s and s[0] != "*" and not s.startswith(("&", "!", "@", "%", "#")):
            return s


def v_userpass_b64():
    """base64 of user:password, the encoded form also free of placeholder words."""
    while True:
        user = pick(["ci-bot", "deploy", "robot$" + pick(ORGS) + "+ci", "release", "jenkins", "svc-builder"])
        enc = b64(f"{user}:{rs(AL + '!#%-_', rint(16, 24), 'dul')}".encode())
        if not any(w in enc.lower() for w in BANNED):
            return enc


def v_jwt():
    header = b64url(b'{"alg":"HS256","typ":"JWT"}')
    payload = {"sub": pick([uuid4(), str(rint(10 ** 9, 10 ** 10 - 1)), "usr_" + rs(AL, 14, "dul")]),
               "name": pick(PEOPLE), "iat": rint(1_740_000_000, 1_790_000_000)}
    if R.random() < 0.5:
        payload["exp"] = payload["iat"] + pick([900, 3600, 86400])
    if R.random() < 0.4:
        payload["role"] = pick(["admin", "operator", "viewer", "service"])
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    return f"{header}.{body}.{rs(US, 43, 'dul')}"


def v_discord():
    return (pick("MNO") + rs(US, rint(23, 25), "dul") + "." + rs(US, 6, "a") + "."
            + rs(US, rint(27, 38), "dul"))


def v_azure_ad():
    while True:
        head = "".join(pick(AL + "_~.") for _ in range(3)) + pick(DG)
        if head[0] not in "~.":
            return head + "Q~" + rs(AL + "_~.-", 34, "dul")


def acct():
    return pick(["st", "sa", ""]) + pick(["prod", "assets", "backup", "logs", "media"]) + rs(LO + DG, 6, "d")


def v_azure_conn():
    return (f"DefaultEndpointsProtocol=https;AccountName={acct()};AccountKey={rb64(64)}"
            f";EndpointSuffix=core.windows.net")


def v_azure_sas():
    sig = quote(rb64(32), safe="")
    a = acct()
    container = pick(["backups", "exports", "reports", "media"])
    blob = pick(["db-2026-03-01.dump", "orders.csv", "invoices/2026-02.zip", "model.onnx"])
    sp = pick(["r", "rl", "rw"])
    return (f"https://{a}.blob.core.windows.net/{container}/{blob}?sv=2022-11-02&ss=b&srt=o&sp={sp}"
            f"&se=2027-01-01T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig={sig}")


def v_db_url(scheme):
    pw = v_pw_url()
    user = pick(["app", "svc_orders", "billing", "reporter", "api"])
    if scheme == "postgres":
        host = pick(["db.prod.internal", "pg-primary.prod.internal",
                     "orders-db.c" + rs(LO + DG, 10, "d") + ".eu-west-1.rds.amazonaws.com"])
        return f"postgres://{user}:{pw}@{host}:5432/{pick(['app', 'orders', 'billing'])}"
    if scheme == "mysql":
        return f"mysql://{user}:{pw}@mysql.prod.internal:3306/{pick(['app', 'shop', 'crm'])}"
    if scheme == "amqp":
        return f"amqp://{user}:{pw}@rabbitmq.prod.internal:5672/{pick(['jobs', 'events', '%2F'])}"
    if scheme == "redis":
        return f"{pick(['redis', 'rediss'])}://:{pw}@cache.prod.internal:6379/0"
    cluster = "cluster0." + rs(LO + DG, 5, "d")
    return f"mongodb+srv://{user}:{pw}@{cluster}.mongodb.net/{pick(['app', 'events'])}?retryWrites=true&w=majority"


# ---- standard token rules --------------------------------------------------------------------
# rule, value generator, env names, json key, python, js, command

STD = [
    ("aws-access-key-id", lambda: "AKIA" + rs(B32, 16, "du"), ["AWS_ACCESS_KEY_ID"], "accessKeyId",
     'session = boto3.Session(aws_access_key_id="{v}", region_name="eu-west-1")',
     'const s3 = new S3Client({ region: "eu-west-1", credentials: { accessKeyId: "{v}", secretAccessKey } });',
     "aws configure set aws_access_key_id {v} --profile deploy"),
    ("github-pat", lambda: "ghp_" + rs(AL, 36, "dul"), ["GITHUB_TOKEN", "GH_TOKEN", "GITHUB_PAT"], "githubToken",
     'gh = Github(auth=Auth.Token("{v}"))', 'const octokit = new Octokit({ auth: "{v}" });',
     "echo {v} | gh auth login --with-token"),
    ("github-fine-grained-pat", lambda: "github_pat_" + rs(AL, 22, "dul") + "_" + rs(AL, 59, "dul"),
     ["GITHUB_TOKEN", "GH_FINE_GRAINED_TOKEN"], "githubToken",
     'gh = Github(auth=Auth.Token("{v}"))', 'const octokit = new Octokit({ auth: "{v}" });',
     "gh auth login --with-token <<< {v}"),
    ("github-oauth-token", lambda: "gho_" + rs(AL, 36, "dul"), ["GITHUB_OAUTH_TOKEN"], "oauth_token",
     None, None, None),
    ("github-app-token", lambda: pick(["ghs_", "ghu_"]) + rs(AL, 36, "dul"),
     ["GITHUB_APP_TOKEN", "INSTALLATION_TOKEN"], "installationToken",
     'g = Github(auth=Auth.Token("{v}"))', None, "GH_TOKEN={v} gh pr list --repo acme/api --state open"),
    ("github-refresh-token", lambda: "ghr_" + rs(AL, 76, "dul"), ["GITHUB_REFRESH_TOKEN"], "refresh_token",
     None, None, None),
    ("gitlab-pat", lambda: "glpat-" + rs(US, 20, "dul"), ["GITLAB_TOKEN", "GL_TOKEN", "CI_PUSH_TOKEN"],
     "privateToken", 'gl = gitlab.Gitlab("https://gitlab.com", private_token="{v}")',
     'const api = new Gitlab({ token: "{v}" });',
     'curl --header "PRIVATE-TOKEN: {v}" "https://gitlab.com/api/v4/projects?owned=true"'),
    ("slack-token", lambda: f"xoxb-{rs(DG, rint(10, 13), 'd')}-{rs(DG, rint(10, 13), 'd')}-{rs(AL, 24, 'dul')}",
     ["SLACK_BOT_TOKEN"], "botToken",
     'app = App(token="{v}", signing_secret=os.environ["SLACK_SIGNING_SECRET"])',
     'const web = new WebClient("{v}");',
     "curl -s -X POST -F token={v} -F channel=#deploys -F text=done https://slack.com/api/chat.postMessage"),
    ("slack-app-token", lambda: f"xapp-1-A{rs(UP + DG, 10, 'du')}-{rs(DG, 13, 'd')}-{rs(HX, 64, 'da')}",
     ["SLACK_APP_TOKEN"], "appToken", 'SocketModeHandler(app, "{v}").start()',
     'const app = new App({ token: botToken, appToken: "{v}", socketMode: true });', None),
    ("slack-webhook", lambda: (f"https://hooks.slack.com/services/T{rs(UP + DG, rint(8, 10), 'du')}"
                               f"/B{rs(UP + DG, rint(8, 10), 'du')}/{rs(AL, 24, 'dul')}"),
     ["SLACK_WEBHOOK_URL", "ALERT_WEBHOOK"], "webhookUrl",
     'requests.post("{v}", json={"text": summary}, timeout=10)',
     'await fetch("{v}", { method: "POST", body: JSON.stringify({ text }) });',
     "curl -X POST -H 'Content-type: application/json' --data '{\"text\":\"Deploy finished\"}' {v}"),
    ("stripe-key", lambda: pick(["sk_live_", "rk_live_", "sk_test_"]) + rs(AL, rint(24, 99), "dul"),
     ["STRIPE_SECRET_KEY", "STRIPE_API_KEY"], "secretKey", 'stripe.api_key = "{v}"',
     'const stripe = require("stripe")("{v}");',
     "curl https://api.stripe.com/v1/charges -u {v}: -d amount=2000 -d currency=eur"),
    ("stripe-webhook-secret", lambda: "whsec_" + rs(AL, 32, "dul"), ["STRIPE_WEBHOOK_SECRET"], "webhookSecret",
     'endpoint_secret = "{v}"', 'const endpointSecret = "{v}";', None),
    ("openai-key", lambda: "sk-proj-" + rs(US, rint(80, 160), "dul"), ["OPENAI_API_KEY"], "openaiApiKey",
     'client = OpenAI(api_key="{v}")', 'const openai = new OpenAI({ apiKey: "{v}" });', None),
    ("anthropic-key", lambda: "sk-ant-api03-" + rs(US, 93, "dul") + "AA", ["ANTHROPIC_API_KEY"], "anthropicApiKey",
     'client = anthropic.Anthropic(api_key="{v}")', 'const anthropic = new Anthropic({ apiKey: "{v}" });',
     'curl https://api.anthropic.com/v1/messages -H "x-api-key: {v}" -H "anthropic-version: 2023-06-01"'),
    ("google-api-key", lambda: "AIza" + rs(US, 35, "dul"), ["GOOGLE_API_KEY", "GEMINI_API_KEY", "MAPS_API_KEY"],
     "apiKey", 'genai.configure(api_key="{v}")',
     'script.src = "https://maps.googleapis.com/maps/api/js?key={v}&callback=initMap";',
     'curl "https://maps.googleapis.com/maps/api/geocode/json?address=Lisbon&key={v}"'),
    ("npm-token", lambda: "npm_" + rs(AL, 36, "dul"), ["NPM_TOKEN", "NODE_AUTH_TOKEN"], "npmToken",
     None, None, "npm config set //registry.npmjs.org/:_authToken {v}"),
    ("pypi-token", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(US, rint(60, 120), "dul"), ["PYPI_API_TOKEN", "TWINE_PASSWORD"],
     "pypiToken", None, None, "twine upload --username __token__ --password {v} dist/*"),
    ("huggingface-token", lambda: "hf_" + rs(AL, 34, "dul"), ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"], "hfToken",
     'login(token="{v}")', 'const hf = new HfInference("{v}");', "huggingface-cli login --token {v}"),
    ("twilio-api-key", lambda: "SK" + rs(HX, 32, "da"), ["TWILIO_API_KEY"], "apiKeySid",
     'client = Client("{v}", api_secret, account_sid)', 'const client = twilio("{v}", apiSecret, { accountSid });',
     None),
    ("sendgrid-api-key", lambda: "SG." + rs(US, 22, "dul") + "." + rs(US, 43, "dul"), ["SENDGRID_API_KEY"],
     "sendgridApiKey", 'sg = SendGridAPIClient("{v}")', 'sgMail.setApiKey("{v}");', None),
    ("azure-ad-client-secret", v_azure_ad, ["AZURE_CLIENT_SECRET"], "clientSecret",
     'credential = ClientSecretCredential(tenant_id, client_id, "{v}")',
     'const credential = new ClientSecretCredential(tenantId, clientId, "{v}");',
     "az login --service-principal -u \"$AZURE_CLIENT_ID\" -p '{v}' --tenant \"$AZURE_TENANT_ID\""),
    ("azure-storage-key", v_azure_conn, ["AZURE_STORAGE_CONNECTION_STRING"], "StorageConnectionString",
     'blob_service = BlobServiceClient.from_connection_string("{v}")',
     'const blobService = BlobServiceClient.fromConnectionString("{v}");',
     'az storage blob upload --connection-string "{v}" -c backups -f db.dump -n db.dump'),
    ("azure-sas-token", v_azure_sas, ["AZURE_BLOB_SAS_URL", "BACKUP_SAS_URL"], "sasUrl",
     'blob = BlobClient.from_blob_url("{v}")', 'const blob = new BlobClient("{v}");',
     'curl -fSL -o restore.bin "{v}"'),
    ("digitalocean-token", lambda: "dop_v1_" + rs(HX, 64, "da"), ["DIGITALOCEAN_ACCESS_TOKEN", "DO_TOKEN"],
     "doToken", 'manager = digitalocean.Manager(token="{v}")', None, "doctl auth init --access-token {v}"),
    ("vault-token", lambda: "hvs." + rs(US, rint(24, 90), "dul"), ["VAULT_TOKEN"], "vaultToken",
     'client = hvac.Client(url="https://vault.internal.io:8200", token="{v}")', None,
     'curl -H "X-Vault-Token: {v}" https://vault.internal.io:8200/v1/kv/data/payments'),
    ("telegram-bot-token", lambda: pick("123456789") + rs(DG, 8, "d") + ":AA" + rs(US, 33, "dul"),
     ["TELEGRAM_BOT_TOKEN"], "botToken", 'bot = telebot.TeleBot("{v}")', 'const bot = new Telegraf("{v}");',
     "curl -s https://api.telegram.org/bot{v}/getMe"),
    ("linear-api-key", lambda: "lin_api_" + rs(AL, 40, "dul"), ["LINEAR_API_KEY"], "linearApiKey",
     None, 'const linear = new LinearClient({ apiKey: "{v}" });', None),
    ("databricks-token", lambda: "dapi" + rs(HX, 32, "da"), ["DATABRICKS_TOKEN"], "databricksToken",
     'w = WorkspaceClient(host="https://adb-4471239951820617.17.azuredatabricks.net", token="{v}")', None, None),
    ("doppler-token", lambda: "dp.pt." + rs(AL, 43, "dul"), ["DOPPLER_TOKEN"], "dopplerToken",
     None, None, "doppler configure set token {v} --scope /srv/app"),
    ("postman-api-key", lambda: "PMAK-" + rs(HX, 24, "da") + "-" + rs(HX, 34, "da"), ["POSTMAN_API_KEY"],
     "postmanApiKey", None, None, 'curl -H "X-Api-Key: {v}" https://api.getpostman.com/collections'),
    ("grafana-token", lambda: "glsa_" + rs(AL, 32, "dul") + "_" + rs(HX, 8, "da"),
     ["GRAFANA_SERVICE_ACCOUNT_TOKEN", "GRAFANA_TOKEN"], "grafanaToken", None, None, None),
    ("groq-api-key", lambda: "gsk_" + rs(AL, 52, "dul"), ["GROQ_API_KEY"], "groqApiKey",
     'client = Groq(api_key="{v}")', 'const groq = new Groq({ apiKey: "{v}" });', None),
    ("perplexity-api-key", lambda: "pplx-" + rs(AL, 48, "dul"), ["PERPLEXITY_API_KEY", "PPLX_API_KEY"],
     "perplexityApiKey", 'client = OpenAI(api_key="{v}", base_url="https://api.perplexity.ai")', None, None),
    ("square-token", lambda: "sq0atp-" + rs(US, 22, "dul"), ["SQUARE_ACCESS_TOKEN"], "squareAccessToken",
     'client = Client(access_token="{v}", environment="production")', None, None),
    ("rubygems-token", lambda: "rubygems_" + rs(HX, 48, "da"), ["GEM_HOST_API_KEY"], "rubygemsApiKey",
     None, None, None),
    ("planetscale-token", lambda: "pscale_tkn_" + rs(AL + "_", 43, "dul"), ["PLANETSCALE_SERVICE_TOKEN"],
     "serviceToken", None, None,
     "pscale deploy-request create app main --org acme --service-token-id k4v7n2pq9w --service-token {v}"),
    ("pulumi-token", lambda: "pul-" + rs(HX, 40, "da"), ["PULUMI_ACCESS_TOKEN"], "pulumiAccessToken",
     None, None, None),
    ("notion-token", lambda: "ntn_" + rs(DG, 11, "d") + rs(AL, 35, "dul"), ["NOTION_TOKEN", "NOTION_API_KEY"],
     "notionToken", 'notion = Client(auth="{v}")', 'const notion = new Client({ auth: "{v}" });', None),
    ("heroku-api-key", lambda: "HRKU-AA" + rs(US, 58, "dul"), ["HEROKU_API_KEY"], "herokuApiKey",
     None, None, None),
    ("shopify-token", lambda: pick(["shpat_", "shpca_", "shppa_", "shpss_"]) + rs(HX, 32, "da"),
     ["SHOPIFY_ACCESS_TOKEN", "SHOPIFY_ADMIN_TOKEN"], "shopifyAccessToken",
     'session = shopify.Session("acme-store.myshopify.com", "2024-07", "{v}")', None,
     'curl -H "X-Shopify-Access-Token: {v}" https://acme-store.myshopify.com/admin/api/2024-07/shop.json'),
]


def sh_cat(path, before, value_line, after, rule):
    lines = [f"$ cat {path}"] + before + [value_line] + after
    return lines, [(1 + len(before), rule)]


def std_item(spec):
    rule, gen, names, jkey, py, js, cmd = spec
    value = gen()
    item = std(rule, value, pick(names), jkey, py, js, cmd)
    f = item.forms
    # Rule-specific homes, used by the renderers where they fit.
    if rule == "github-pat" and R.random() < 0.5:
        f["netrc"] = lambda ind="": ([f"machine github.com login x-access-token password {value}"], [(0, rule)])
    if rule == "npm-token":
        f["npmrc"] = lambda ind="": ([f"//registry.npmjs.org/:_authToken={value}"], [(0, rule)])
    if rule == "heroku-api-key":
        f["netrc"] = lambda ind="": (["machine api.heroku.com", "  login ops@acme.io", f"  password {value}"],
                                     [(2, rule)])
    if rule == "github-oauth-token":
        f["sh"] = lambda ind="": sh_cat("~/.config/gh/hosts.yml", ["github.com:", "    user: " + pick(["octo-ops", "mlindqvist", "release-bot"])],
                                        f"    oauth_token: {value}", ["    git_protocol: https"], rule)
    if rule == "databricks-token":
        f["sh"] = lambda ind="": sh_cat("~/.databrickscfg", ["[DEFAULT]", "host = https://adb-4471239951820617.17.azuredatabricks.net"],
                                        f"token = {value}", [], rule)
    if rule == "rubygems-token":
        f["sh"] = lambda ind="": sh_cat("~/.gem/credentials", ["---"], f":rubygems_api_key: {value}", [], rule)
    if rule == "pypi-token" and R.random() < 0.6:
        f["sh"] = lambda ind="": sh_cat("~/.pypirc", ["[distutils]", "index-servers = pypi", "", "[pypi]", "  username = __token__"],
                                        f"  password = {value}", [], rule)
    if rule == "jwt":
        pass
    item.kinds = Item(rule, f).kinds
    return item


def age_item():
    value = "AGE-SECRET-KEY-1" + rs(BECH, 58).upper()
    pub = "age1" + rs(BECH, 58)
    item = std("age-secret-key", value, "SOPS_AGE_KEY", "ageKey", None, None, None,
               only=("env", "export", "yaml", "k8senv", "json"))
    created = f"2026-0{rint(1, 9)}-{rint(10, 28)}T{rint(10, 23)}:{rint(10, 59)}:{rint(10, 59)}Z"
    cat = lambda ind="": sh_cat("~/.config/sops/age/keys.txt", [f"# created: {created}", f"# public key: {pub}"],
                                value, [], "age-secret-key")
    item.forms["sh"] = cat
    item.forms["md"] = lambda ind="": ("text",) + tuple_shift(cat(), 1)
    item.kinds = Item(item.rule, item.forms).kinds
    return item


def tuple_shift(lines_labels, drop):
    lines, labels = lines_labels
    return lines[drop:], [(i - drop, r) for i, r in labels]


def jwt_item():
    v = v_jwt()
    name = pick(["SESSION_TOKEN", "SERVICE_JWT", "ID_TOKEN"])
    item = std("jwt", v, name, pick(["id_token", "sessionToken", "serviceJwt"]),
               'resp = requests.get(url, cookies={"session": "{v}"}, timeout=10)',
               'localStorage.setItem("session", "{v}");', 'curl -b "session={v}" https://app.shop.io/api/me')
    item.forms["kubeconfig"] = lambda ind="": ([f"- name: {pick(['ci-deployer', 'argo-sync', 'ops-readonly'])}",
                                                "  user:", f"    token: {v}"], [(2, "jwt")])
    item.kinds = Item(item.rule, item.forms).kinds
    return item


def url_item(scheme):
    v = v_db_url(scheme)
    names = {"postgres": "DATABASE_URL", "mysql": "MYSQL_URL", "amqp": "CELERY_BROKER_URL",
             "redis": "REDIS_URL", "mongodb": "MONGODB_URI"}
    py = {"postgres": 'engine = create_engine("{v}", pool_pre_ping=True)',
          "mysql": 'engine = create_engine("{v}")', "amqp": 'app = Celery("tasks", broker="{v}")',
          "redis": 'cache = redis.from_url("{v}")', "mongodb": 'client = MongoClient("{v}")'}
    js = {"postgres": 'const pool = new Pool({ connectionString: "{v}" });',
          "mysql": 'const conn = await mysql.createConnection("{v}");',
          "amqp": 'const conn = await amqp.connect("{v}");', "redis": 'const redis = new Redis("{v}");',
          "mongodb": 'await mongoose.connect("{v}");'}
    cmd = {"postgres": "psql \"{v}\" -c 'select count(*) from orders'", "mysql": None, "amqp": None,
           "redis": "redis-cli -u {v} ping", "mongodb": 'mongosh "{v}" --eval "db.stats()"'}
    return std("password-in-url", v, names[scheme], pick(["url", "connectionString", "databaseUrl"]),
               py[scheme], js[scheme], cmd[scheme])


def mailgun_item(raw):
    if raw:
        v = f"{rs(HX, 32, 'da')}-{rs(HX, 8, 'da')}-{rs(HX, 8, 'da')}"
        return std("mailgun-api-key", v, "MAILGUN_API_KEY", only=("env", "export", "yaml", "k8senv"))
    v = "key-" + rs(HX, 32, "da")
    return std("mailgun-api-key", v, "MAILGUN_API_KEY", "mailgunApiKey",
               'resp = requests.post(url, auth=("api", "{v}"), data=message, timeout=10)', None,
               "curl -s --user 'api:{v}' https://api.mailgun.net/v3/mg.shop.io/messages -F to=oncall@shop.io -F text=disk")


def sentry_item(raw):
    if raw:
        return std("sentry-auth-token", rs(HX, 64, "da"), "SENTRY_AUTH_TOKEN", only=("env", "export", "yaml", "k8senv"))
    v = "sntryu_" + rs(HX, 64, "da")
    return std("sentry-auth-token", v, "SENTRY_AUTH_TOKEN", "authToken", None,
               'sentryWebpackPlugin({ org: "acme", project: "web", authToken: "{v}" }),',
               "sentry-cli --auth-token {v} releases new 2.4.1")


def discord_item(header):
    v = v_discord()
    if not header:
        return std("discord-bot-token", v, "DISCORD_BOT_TOKEN", None, 'client.run("{v}")', 'client.login("{v}");',
                   None, only=("env", "export", "yaml", "k8senv", "python", "js"))
    return std("discord-bot-token", v, "DISCORD_BOT_TOKEN", None,
               'headers = {"Authorization": "Bot {v}", "User-Agent": "DiscordBot (https://acme.io, 1.0)"}',
               'const res = await fetch(url, { headers: { Authorization: "Bot {v}" } });',
               'curl -H "Authorization: Bot {v}" https://discord.com/api/v10/users/@me',
               only=("cmd", "python", "js"))


def generic_items():
    out = []
    for name in ("API_KEY", "INTERNAL_API_KEY"):
        v = rs(AL, 32, "dul")
        out.append(std("generic-secret", v, name, pick(["apiKey", "api_key"]), f'{name} = "{{v}}"',
                       'const apiKey = "{v}";', None))
    v = rs(AL + "-_~.", rint(34, 44), "dul")
    out.append(std("generic-secret", v, "client_secret", "client_secret", 'CLIENT_SECRET = "{v}"',
                   'const clientSecret = "{v}";', None, only=("yaml", "json", "python", "js")))
    v = rs(AL, 40, "dul")
    item = std("generic-secret", v, "access_token", "access_token", 'access_token = "{v}"', None, None,
               only=("yaml", "json", "python"))
    item.forms["sh"] = lambda ind="": ([
        "$ curl -s -X POST https://auth.internal.io/oauth/token -d grant_type=client_credentials -d client_id=reports",
        "{", f'  "access_token": "{v}",', '  "token_type": "Bearer",', '  "expires_in": 3600', "}"], [(2, "generic-secret")])
    item.kinds = Item(item.rule, item.forms).kinds
    out.append(item)
    for _ in range(2):
        v = rs(LO + DG + "!@#$%^&(-_=+", 50, "dl")
        out.append(std("generic-secret", v, "SECRET_KEY", "secret_key", "SECRET_KEY = '{v}'", None, None,
                       only=("env", "yaml", "python", "json", "k8senv")))
    return out


def aws_pair_item():
    """An access key id and its secret key, on two lines (two labels)."""
    kid = "AKIA" + rs(B32, 16, "du")
    sec = rs(B64, 40, "dul")
    env = lambda ind="": ([f"{ind}AWS_ACCESS_KEY_ID={kid}", f"{ind}AWS_SECRET_ACCESS_KEY={sec}"],
                          [(0, "aws-access-key-id"), (1, "generic-secret")])
    yaml = lambda ind="": ([f"{ind}AWS_ACCESS_KEY_ID: {kid}", f"{ind}AWS_SECRET_ACCESS_KEY: {yq(sec, True)}"],
                           [(0, "aws-access-key-id"), (1, "generic-secret")])
    creds = lambda ind="": ([f"$ cat ~/.aws/credentials", "[default]", f"aws_access_key_id = {kid}",
                             f"aws_secret_access_key = {sec}", "region = eu-west-1"],
                            [(2, "aws-access-key-id"), (3, "generic-secret")])
    md = lambda ind="": ("ini",) + tuple_shift(creds(), 1)
    return Item("aws-access-key-id", {"env": env, "yaml": yaml, "sh": creds, "md": md},
                kinds=["env", "shell", "readme", "skill", "gha", "gitlab", "k8s-secret"])


def password_items():
    out = []
    for gen in (v_pw_letters, v_pw_letters, v_pw_letters, v_pw_star, v_pw_star, v_pw_star):
        v = gen()
        item = std("password-field", v, pick(["DB_PASSWORD", "POSTGRES_PASSWORD", "SMTP_PASSWORD", "ADMIN_PASSWORD"]),
                   "password", None, None, None, only=("env", "k8senv", "json"))
        item.forms["yaml"] = one("password-field", lambda v=v: f"password: {yq(v, True)}")
        item.forms["python"] = one("password-field", lambda v=v: f'"PASSWORD": "{v}",')
        item.kinds = Item(item.rule, item.forms).kinds
        out.append(item)
    return out


# ---- context-bound rules ----------------------------------------------------------------------

def docker_item():
    auth = v_userpass_b64()
    reg = pick(["registry.example.io", "ghcr.io", "https://index.docker.io/v1/", "harbor.corp.io",
                "registry.gitlab.com", "quay.io"])
    block = lambda: (["{", '  "auths": {', f'    "{reg}": {{', f'      "auth": "{auth}"', "    }", "  }", "}"], [(3, "docker-config-auth")])
    forms = {"dockercfg": lambda ind="": ((reg, auth), None),
             "sh": lambda ind="": (["$ cat ~/.docker/config.json"] + block()[0], [(4, "docker-config-auth")]),
             "md": lambda ind="": ("json",) + block()}
    return Item("docker-config-auth", forms, kinds=["dockercfg", "shell", "readme", "skill"])


def npmrc_item(i):
    if i % 2 == 0:
        reg = pick(["//registry.npmjs.org/", "//nexus.acme.io/repository/npm-private/", "//npm.corp.io/"])
        tok = uuid4()
        if "nexus" in reg:
            tok = "NpmToken." + tok
        line = f"{reg}:_authToken={tok}"
    else:
        reg = pick(["//artifactory.corp.io/artifactory/api/npm/npm/", "//verdaccio.internal.io/", ""])
        line = f"{reg}{':' if reg else ''}_auth={v_userpass_b64()}"
    rule = "npmrc-auth"
    forms = {
        "npmrc": lambda ind="": ([line], [(0, rule)]),
        "sh": lambda ind="": ([f"$ echo '{line}' >> ~/.npmrc", "$ npm whoami", pick(["ci-publisher", "deploy-bot"])], [(0, rule)]),
        "md": lambda ind="": ("ini", ["registry=https://registry.npmjs.org/", line, "always-auth=true"], [(1, rule)]),
        "step": lambda ind="": ([f"{ind}echo \"{line}\" > ~/.npmrc"], [(0, rule)]),
    }
    return Item(rule, forms, kinds=["npmrc", "shell", "readme", "skill", "gha", "gitlab"])


def netrc_item(i):
    pw = v_pw_plain()
    host = pick(["api.host.io", "git.corp.io", "artifacts.acme.io", "ftp.partner.io", "bitbucket.org"])
    login = pick(["deploy", "ci-bot", "svc-artifacts", "mlindqvist"])
    if i % 2 == 0:
        entry = ([f"machine {host} login {login} password {pw}"], [(0, "netrc-password")])
    else:
        entry = ([f"machine {host}", f"  login {login}", f"  password {pw}"], [(2, "netrc-password")])
    forms = {"netrc": lambda ind="": entry,
             "sh": lambda ind="": (["$ cat ~/.netrc"] + entry[0], [(j + 1, r) for j, r in entry[1]]),
             "md": lambda ind="": ("",) + entry}
    return Item("netrc-password", forms, kinds=["netrc", "shell", "readme", "skill"])


def pgpass_item(i):
    pw = rs(AL + "!@#%^-_.", rint(14, 22), "dul")
    host = pick(["db.host.io", "pg-primary.prod.internal", "replica-2.db.corp.io", "*"])
    line = f"{host}:5432:{pick(['appdb', 'orders', 'analytics', '*'])}:{pick(['appuser', 'reporter', 'etl'])}:{pw}"
    rule = "pgpass-password"
    forms = {"pgpass": lambda ind="": ([line], [(0, rule)]),
             "sh": lambda ind="": ([f"$ echo '{line}' >> ~/.pgpass", "$ chmod 600 ~/.pgpass"], [(0, rule)]),
             "md": lambda ind="": ("", ["# hostname:port:database:username:password", line], [(1, rule)])}
    return Item(rule, forms, kinds=["pgpass", "shell", "readme", "skill"])


def mysql_item(i):
    if i % 2 == 0:
        line = f"mysql -h db.prod.internal -u app -p{v_pw_bare()} appdb"
    else:
        line = f"mysqldump -uapp -p'{v_pw_plain()}' --single-transaction appdb > appdb.sql"
    rule = "mysql-cli-password"
    forms = {"cmd": lambda ind="": ([line], [(0, rule)]),
             "step": lambda ind="": ([ind + line], [(0, rule)])}
    return Item(rule, forms, kinds=["shell", "readme", "skill", "gha", "gitlab"])


def auth_header_item(i):
    if i % 2 == 0:
        value = "Bearer " + rs(AL, 40, "dul")
    else:
        value = "Basic " + v_userpass_b64()
    rule = "authorization-header"
    url = pick(["https://api.partner.io/v2/orders", "https://internal.acme.io/admin/jobs", "https://billing.corp.io/api/invoices"])
    forms = {
        "cmd": one(rule, lambda: f'curl -sS -H "Authorization: {value}" {url}'),
        "python": one(rule, lambda: f'headers = {{"Authorization": "{value}", "Accept": "application/json"}}'),
        "js": one(rule, lambda: f'const res = await fetch(url, {{ headers: {{ Authorization: "{value}" }} }});'),
        "md": lambda ind="": ("http", [f"GET {url.split('.io', 1)[1]} HTTP/1.1", f"Host: {url.split('/')[2]}",
                                       f"Authorization: {value}", "Accept: application/json"], [(2, rule)]),
    }
    return Item(rule, forms, kinds=["shell", "readme", "skill", "python", "js"])


def private_key_item(i):
    key = [rsa_key, openssh_key, ec_key, ec_key, openssh_key][i % 5]()
    name = pick(["id_ed25519", "deploy_key", "id_rsa", "server.key"])
    rule = "private-key"
    forms = {
        "md": lambda ind="": (pick(["", "text", "pem"]), key, [(0, rule)]),
        "sh": lambda ind="": ([f"$ cat ~/.ssh/{name}"] + key, [(1, rule)]),
        "yaml": lambda ind="": ([f"{ind}{pick(['ssh-privatekey', 'DEPLOY_SSH_KEY', 'tls.key'])}: |"] + [ind + "  " + k for k in key], [(1, rule)]),
        "python": lambda ind="": ([f'PRIVATE_KEY = """{key[0]}'] + key[1:-1] + [key[-1] + '"""'], [(0, rule)]),
    }
    return Item(rule, forms, kinds=["readme", "skill", "shell", "k8s-secret", "gitlab", "python"])


def gcp_item():
    key = pkcs8_key()
    one_line = "\\n".join(key) + "\\n"
    project = pick(["acme-prod-4471", "northwind-data", "globex-ml-2291"])
    sa = pick(["deployer", "bq-loader", "ci-runner"])
    lines = ["{", '  "type": "service_account",', f'  "project_id": "{project}",',
             f'  "private_key_id": "{rs(HX, 40, "da")}",', f'  "private_key": "{one_line}",',
             f'  "client_email": "{sa}@{project}.iam.gserviceaccount.com",', f'  "client_id": "{rs(DG, 21, "d")}",',
             '  "auth_uri": "https://accounts.google.com/o/oauth2/auth",',
             '  "token_uri": "https://oauth2.googleapis.com/token",',
             '  "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",',
             f'  "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/{sa}%40{project}.iam.gserviceaccount.com",',
             '  "universe_domain": "googleapis.com"', "}"]
    return Item("private-key", {"json-sa": lambda ind="": (lines, [(4, "private-key")])}, kinds=["json-sa"])


def b64key_item(i):
    key = [ec_key, ec_key, rsa_key, ec_key][i % 4]()
    enc = b64_of_lines(key)
    cert = b64_of_lines(cert_pem())
    rule = "base64-private-key"
    user = pick(["admin@prod", "kubernetes-admin", "ops-breakglass"])
    svc = pick(SVCS)

    def secret_doc(ind=""):
        return (["apiVersion: v1", "kind: Secret", "metadata:", f"  name: {svc}-tls", f"  namespace: {pick(NS)}",
                 "type: kubernetes.io/tls", "data:", f"  tls.crt: {cert}", f"  tls.key: {enc}"], [(8, rule)])

    forms = {
        "kubeconfig": lambda ind="": ([f"- name: {user}", "  user:", f"    client-certificate-data: {cert}",
                                       f"    client-key-data: {enc}"], [(3, rule)]),
        "k8s-doc": secret_doc,
        "md": lambda ind="": ("yaml",) + secret_doc(),
        "sh": lambda ind="": (["$ kubectl get secret " + svc + "-tls -o yaml"] + secret_doc()[0], [(9, rule)]),
    }
    return Item(rule, forms, kinds=["kubeconfig", "k8s-secret", "readme", "skill", "shell"])


def ppk_item(i):
    pub = b64(ssh_string(b"ssh-ed25519") + ssh_string(rbytes(32)))
    priv = b64(ssh_string(rbytes(32)))
    comment = pick(["eddsa-key-20260114", "bastion-prod", "deploy@jump-host", "eddsa-key-20251203"])
    lines = ["PuTTY-User-Key-File-3: ssh-ed25519", "Encryption: none", f"Comment: {comment}",
             "Public-Lines: 2", pub[:64], pub[64:], "Private-Lines: 1", priv, f"Private-MAC: {rs(HX, 64, 'da')}"]
    rule = "putty-private-key"
    forms = {"ppk": lambda ind="": (lines, [(0, rule)]),
             "md": lambda ind="": ("", lines, [(0, rule)]),
             "sh": lambda ind="": ([f"$ cat ~/keys/{comment.split('@')[0]}.ppk"] + lines, [(1, rule)])}
    return Item(rule, forms, kinds=["ppk", "readme", "skill", "shell"])


def all_items():
    items = []
    for spec in STD:
        n = 4 if spec[0] != "stripe-key" else 5
        items += [std_item(spec) for _ in range(n)]
    items += [age_item() for _ in range(4)]
    items += [jwt_item() for _ in range(5)]
    items += [url_item(s) for s in ("postgres", "mysql", "amqp", "redis", "mongodb", "postgres")]
    items += [mailgun_item(raw) for raw in (False, True, False, True)]
    items += [sentry_item(raw) for raw in (False, True, False, True)]
    items += [discord_item(h) for h in (False, True, False, True)]
    items += generic_items() + password_items()
    items += [aws_pair_item() for _ in range(2)]
    items += [docker_item() for _ in range(4)]
    items += [npmrc_item(i) for i in range(4)]
    items += [netrc_item(i) for i in range(4)]
    items += [pgpass_item(i) for i in range(5)]
    items += [mysql_item(i) for i in range(4)]
    items += [auth_header_item(i) for i in range(4)]
    items += [private_key_item(i) for i in range(5)] + [gcp_item()]
    items += [b64key_item(i) for i in range(4)]
    items += [ppk_item(i) for i in range(4)]
    return items


# ---------------------------------------------------------------------------------------------
# Documents

class Doc:
    def __init__(self):
        self.lines = []
        self.expect = []

    def add(self, *lines):
        for line in lines:
            self.lines.extend(line.split("\n"))

    def put(self, lines, labels, rules_seen=None):
        base = len(self.lines)
        self.lines.extend(lines)
        for i, rule in labels:
            self.expect.append({"line": base + i + 1, "rule": rule})

    def text(self):
        return "\n".join(self.lines) + "\n"


ENV_BENIGN = ["NODE_ENV=production", "PORT=8080", "LOG_LEVEL=info", "TZ=UTC", "APP_NAME={svc}",
              "DB_HOST=db1.prod.internal", "DB_PORT=5432", "DB_NAME=app", "DB_USER=app",
              "REDIS_HOST=cache.prod.internal", "FEATURE_NEW_CHECKOUT=true", "MAX_UPLOAD_MB=25",
              "CORS_ORIGINS=https://app.shop.io,https://admin.shop.io", "WORKER_CONCURRENCY=4",
              "SENTRY_ENVIRONMENT=production", "OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4317",
              "AWS_REGION=eu-west-1", "S3_BUCKET={org}-prod-uploads", "SMTP_HOST=smtp.mailgun.org",
              "SMTP_PORT=587", "PUBLIC_BASE_URL=https://shop.io", "RATE_LIMIT_PER_MINUTE=600",
              "CACHE_TTL_SECONDS=300", "GUNICORN_WORKERS=3", "HTTP_TIMEOUT_MS=5000"]

SH_BENIGN = [
    ["$ git status -sb", "## main...origin/main"],
    ["$ kubectl get pods -n {ns} -l app={svc}", "NAME                          READY   STATUS    RESTARTS   AGE",
     "{svc}-{pod}   1/1     Running   0          3h12m"],
    ["$ python -m pytest -q", "........................................................ [100%]", "56 passed in 4.02s"],
    ["$ npm run build", "", "> {svc}@2.4.1 build", "> tsc -p tsconfig.json", ""],
    ["$ terraform plan -out plan.tfplan", "Refreshing state...", "Plan: 2 to add, 1 to change, 0 to destroy."],
    ["$ systemctl status {svc} --no-pager | head -3", "* {svc}.service - {svc} worker",
     "     Loaded: loaded (/etc/systemd/system/{svc}.service; enabled; preset: enabled)",
     "     Active: active (running) since Tue 2026-03-10 09:14:02 UTC; 2h 11min ago"],
    ["$ df -h /var/lib/postgresql", "Filesystem      Size  Used Avail Use% Mounted on",
     "/dev/nvme1n1    200G  131G   70G  66% /var/lib/postgresql"],
    ["$ curl -s https://{svc}.internal.io/healthz", '{{"status":"ok","version":"2.4.1"}}'],
    ["$ docker compose up -d", "[+] Running 3/3", " ✔ Container {svc}-db-1      Started",
     " ✔ Container {svc}-cache-1   Started", " ✔ Container {svc}-app-1     Started"],
]


def sh_benign(ctx):
    block = pick(SH_BENIGN)
    c = dict(ctx, pod=rs(LO + DG, 10, "d") + "-" + rs(LO + DG, 5, "d"))
    return [fill(line, c) for line in block]


MD_BENIGN = [
    ("bash", ["git pull --rebase", "make build", "make deploy ENV={ns}"]),
    ("bash", ["kubectl -n {ns} rollout status deploy/{svc}", "kubectl -n {ns} logs deploy/{svc} --since=10m | tail -50"]),
    ("console", ["$ make test", "ok   {svc}/internal/api   0.412s", "ok   {svc}/internal/store 1.087s"]),
    ("yaml", ["replicas: 3", "resources:", "  requests:", "    cpu: 250m", "    memory: 512Mi"]),
    ("python", ["def retry(fn, attempts=3):", "    for i in range(attempts):", "        try:", "            return fn()",
                "        except TimeoutError:", "            time.sleep(2 ** i)", "    raise RuntimeError(\"gave up\")"]),
]


def md_benign(ctx):
    lang, lines = pick(MD_BENIGN)
    return [f"```{lang}"] + [fill(line, ctx) for line in lines] + ["```"]


def r_markdown(items, skill):
    ctx = context()
    d = Doc()
    title = fill(pick(["{svc}: {task}", "Runbook: {task}", "{svc} operations", "Working on {svc}"]), ctx)
    if skill:
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:48].strip("-")
        d.add("---", f"name: {slug}", f"description: {fill('Steps for {task} on {svc}, with the exact commands that worked.', ctx)}",
              "---", "")
    d.add(f"# {title[0].upper() + title[1:]}", "", prose(ctx), "")
    headings = ["Setup", "Configuration", "Credentials used by the job", "Local run", "Calling the API",
                "Wiring it up", "Troubleshooting", "Verify", "Connecting", "Release"]
    R.shuffle(headings)
    for n, item in enumerate(items):
        d.add(f"## {headings[n % len(headings)]}", "", prose(ctx, 1), "")
        lang, lines, labels = item.md()
        d.add(f"```{lang}")
        d.put(lines, labels)
        d.add("```", "")
        if R.random() < 0.5:
            d.add(prose(ctx, 1), "")
            d.add(*md_benign(ctx))
            d.add("")
    d.add("## Notes", "", prose(ctx, 2))
    return d


def r_env(items):
    ctx = context()
    d = Doc()
    d.add(pick([f"# {ctx['svc']} — production settings, loaded by docker compose",
                f"# Environment for {ctx['svc']} ({ctx['ns']})", "# Local overrides; sourced by scripts/dev.sh"]))
    benign = [fill(b, ctx) for b in R.sample(ENV_BENIGN, rint(5, 9))]
    d.add(*benign[:3], "")
    for item in items:
        lines, labels = item.form("env")
        if R.random() < 0.4:
            d.add(pick(["# integrations", "# rotated 2026-02-14", "# third-party", "# keep in sync with the vault copy"]))
        d.put(lines, labels)
        if R.random() < 0.5 and len(benign) > 3:
            d.add(benign.pop())
    d.add("", *benign[3:])
    return d


def r_shell(items):
    ctx = context()
    d = Doc()
    d.add(f"$ cd ~/src/{ctx['svc']}")
    for item in items:
        if R.random() < 0.7:
            d.add(*sh_benign(ctx))
        lines, labels = item.sh()
        d.put(lines, labels)
    d.add(*sh_benign(ctx))
    d.add("$ exit")
    return d


def steps_and_vars(items, ind_var, ind_step):
    vars_, steps = [], []
    for item in items:
        if "step" in item.forms and ("yaml" not in item.forms or R.random() < 0.5):
            steps.append(item)
        else:
            vars_.append(item)
    return vars_, steps


def r_gha(items):
    ctx = context()
    d = Doc()
    vars_, steps = steps_and_vars(items, "      ", "      ")
    d.add(f"name: {pick(['Deploy', 'Release', 'Nightly', 'CI'])}", "", "on:", "  push:", "    branches: [main]",
          "  workflow_dispatch:", "", "jobs:", f"  {pick(['deploy', 'publish', 'build'])}:",
          "    runs-on: ubuntu-latest", "    env:", f"      NODE_VERSION: \"{pick(['18', '20', '22'])}\"",
          f"      APP_NAME: {ctx['svc']}")
    for item in vars_:
        lines, labels = item.form("yaml", "      ")
        d.put(lines, labels)
    d.add("    steps:", f"      - uses: actions/checkout@{rs(HX, 40, 'da')} # v4",
          f"      - uses: actions/setup-node@{rs(HX, 40, 'da')} # v4", "        with:",
          "          node-version: ${{ env.NODE_VERSION }}", "      - run: npm ci")
    for item in steps:
        lines, labels = item.step("")
        d.put(["      - run: " + lines[0]], labels)
    d.add("      - run: npm run build", f"      - run: ./scripts/deploy.sh {ctx['ns']}")
    return d


def r_gitlab(items):
    ctx = context()
    d = Doc()
    vars_, steps = steps_and_vars(items, "  ", "    ")
    d.add("stages: [test, build, deploy]", "", "variables:", f"  APP_NAME: {ctx['svc']}",
          '  DOCKER_DRIVER: overlay2')
    for item in vars_:
        lines, labels = item.form("yaml", "  ")
        d.put(lines, labels)
    d.add("", "test:", "  stage: test", "  image: python:3.12-slim", "  script:", "    - pip install -r requirements.txt",
          "    - pytest -q", "", "deploy:", "  stage: deploy", "  image: alpine:3.20", "  script:")
    for item in steps:
        lines, labels = item.step("    - ")
        d.put(lines, labels)
    d.add(f"    - ./scripts/deploy.sh {ctx['ns']}", "  only:", "    - main")
    return d


def r_k8s_secret(items):
    ctx = context()
    d = Doc()
    plain = [it for it in items if "k8s-doc" not in it.forms]
    docs = [it for it in items if "k8s-doc" in it.forms]
    if plain:
        d.add("apiVersion: v1", "kind: Secret", "metadata:", f"  name: {ctx['svc']}-credentials",
              f"  namespace: {ctx['ns']}", "  labels:", f"    app.kubernetes.io/name: {ctx['svc']}",
              "type: Opaque", "stringData:")
        for item in plain:
            lines, labels = item.form("yaml", "  ")
            d.put(lines, labels)
    for item in docs:
        if d.lines:
            d.add("---")
        lines, labels = item.form("k8s-doc")
        d.put(lines, labels)
    return d


def r_k8s_deploy(items):
    ctx = context()
    d = Doc()
    d.add("apiVersion: apps/v1", "kind: Deployment", "metadata:", f"  name: {ctx['svc']}", f"  namespace: {ctx['ns']}",
          "spec:", "  replicas: 2", "  selector:", "    matchLabels:", f"      app: {ctx['svc']}", "  template:",
          "    metadata:", "      labels:", f"        app: {ctx['svc']}", "    spec:", "      containers:",
          f"        - name: {ctx['svc']}", f"          image: ghcr.io/{ctx['org']}/{ctx['svc']}:2.4.1",
          "          ports:", "            - containerPort: 8080", "          env:",
          "            - name: LOG_LEVEL", "              value: info")
    for item in items:
        lines, labels = item.form("k8senv", "            ")
        d.put(lines, labels)
    d.add("          readinessProbe:", "            httpGet:", "              path: /healthz", "              port: 8080")
    return d


def r_json(items):
    ctx = context()
    d = Doc()
    d.add("{", '  "app": {', f'    "name": "{ctx["svc"]}",', '    "port": 8080,', f'    "environment": "{ctx["ns"]}"',
          "  },", f'  "{pick(["integrations", "credentials", "services", "providers"])}": {{')
    for n, item in enumerate(items):
        lines, labels = item.form("json", "    ")
        if n < len(items) - 1:
            lines = lines[:-1] + [lines[-1] + ","]
        d.put(lines, labels)
    d.add("  },", '  "features": {', '    "newCheckout": true,', '    "auditLog": false', "  },",
          '  "logging": { "level": "info", "format": "json" }', "}")
    return d


def r_json_sa(items):
    d = Doc()
    lines, labels = items[0].form("json-sa")
    d.put(lines, labels)
    return d


def r_python(items):
    ctx = context()
    d = Doc()
    d.add(f'"""{ctx["svc"]}: {pick(["client setup", "settings", "integration helpers"])}."""', "", "import os",
          "import time", "", "import requests", "")
    for item in items:
        if R.random() < 0.5:
            d.add(f"# {pick(['Provider client', 'Used by the nightly job', 'TODO: move to the vault', 'Connection'])}")
        lines, labels = item.form("python")
        if lines[0].startswith('"PASSWORD"'):
            d.add("DATABASES = {", '    "default": {', '        "ENGINE": "django.db.backends.postgresql",',
                  '        "NAME": "app",', '        "USER": "app",')
            d.put(["        " + lines[0]], labels)
            d.add('        "HOST": "db.prod.internal",', "    }", "}")
        else:
            d.put(lines, labels)
        d.add("")
    d.add("", "def fetch_orders(since: str) -> list[dict]:", '    """Orders updated since the given ISO timestamp."""',
          f'    resp = requests.get("https://{ctx["svc"]}.internal.io/v1/orders", params={{"since": since}}, timeout=10)',
          "    resp.raise_for_status()", '    return resp.json()["orders"]')
    return d


def r_js(items):
    ctx = context()
    d = Doc()
    d.add(f"// {ctx['svc']} — {pick(['integration setup', 'worker bootstrap', 'API clients'])}",
          '"use strict";', "", 'const express = require("express");', "")
    for item in items:
        lines, labels = item.form("js")
        if lines[0].lstrip().startswith("sentryWebpackPlugin"):
            d.add("module.exports = {", "  plugins: [")
            d.put(["    " + lines[0]], labels)
            d.add("  ],", "};")
        else:
            d.put(lines, labels)
        d.add("")
    d.add("const app = express();", 'app.get("/healthz", (req, res) => res.json({ status: "ok" }));',
          "app.listen(process.env.PORT || 8080);")
    return d


def r_kubeconfig(items):
    d = Doc()
    cluster = pick(["prod", "staging-eu", "ops"])
    server = pick(["https://10.0.12.4:6443", f"https://{rs(HX, 32, 'da').upper()}.gr7.eu-west-1.eks.amazonaws.com"])
    users = []
    d.add("apiVersion: v1", "kind: Config", "clusters:", "- cluster:",
          f"    certificate-authority-data: {b64_of_lines(cert_pem())}", f"    server: {server}", f"  name: {cluster}",
          "contexts:")
    user_blocks = [item.form("kubeconfig") for item in items]
    for lines, _ in user_blocks:
        user = lines[0][len("- name: "):]
        users.append(user)
        d.add("- context:", f"    cluster: {cluster}", f"    user: {user}", f"  name: {user}")
    d.add(f"current-context: {users[0]}", "preferences: {}", "users:")
    for lines, labels in user_blocks:
        d.put(lines, labels)
    return d


def r_dockercfg(items):
    d = Doc()
    d.add("{", '  "auths": {')
    for n, item in enumerate(items):
        (reg, auth), _ = item.form("dockercfg")
        d.add(f'    "{reg}": {{')
        d.put([f'      "auth": "{auth}"'], [(0, "docker-config-auth")])
        d.add("    }" + ("," if n < len(items) - 1 else ""))
    d.add("  },", '  "HttpHeaders": {', f'    "User-Agent": "Docker-Client/{pick(["24.0.7", "26.1.4", "27.3.1"])} (linux)"',
          "  }", "}")
    return d


def r_npmrc(items):
    d = Doc()
    d.add("registry=https://registry.npmjs.org/", f"@{pick(ORGS)}:registry=https://npm.pkg.github.com")
    for item in items:
        lines, labels = item.form("npmrc")
        d.put(lines, labels)
    d.add("always-auth=true", "save-exact=true", "engine-strict=true")
    return d


def r_netrc(items):
    d = Doc()
    if R.random() < 0.5:
        d.add("# used by curl --netrc and git over https")
    for item in items:
        lines, labels = item.form("netrc")
        d.put(lines, labels)
    if R.random() < 0.3:
        d.add("default login anonymous password ftp@acme.io")
    return d


def r_pgpass(items):
    d = Doc()
    d.add("# hostname:port:database:username:password")
    for item in items:
        lines, labels = item.form("pgpass")
        d.put(lines, labels)
    return d


def r_ppk(items):
    d = Doc()
    lines, labels = items[0].form("ppk")
    d.put(lines, labels)
    return d


RENDER = {
    "readme": (lambda it: r_markdown(it, False), "README.md", 3),
    "skill": (lambda it: r_markdown(it, True), "SKILL.md", 3),
    "env": (r_env, ".env", 4),
    "shell": (r_shell, "session.log", 3),
    "gha": (r_gha, ".github/workflows/deploy.yml", 3),
    "gitlab": (r_gitlab, ".gitlab-ci.yml", 3),
    "k8s-secret": (r_k8s_secret, "secret.yaml", 3),
    "k8s-deploy": (r_k8s_deploy, "deployment.yaml", 3),
    "json": (r_json, "config.json", 3),
    "json-sa": (r_json_sa, "service-account.json", 1),
    "python": (r_python, "settings.py", 3),
    "js": (r_js, "config.js", 3),
    "kubeconfig": (r_kubeconfig, "kubeconfig.yaml", 1),
    "dockercfg": (r_dockercfg, "config.json", 1),
    "npmrc": (r_npmrc, ".npmrc", 1),
    "netrc": (r_netrc, ".netrc", 2),
    "pgpass": (r_pgpass, ".pgpass", 2),
    "ppk": (r_ppk, "deploy.ppk", 1),
}
FILE_NAMES = {
    "readme": ["README.md", "docs/setup.md", "RUNBOOK.md"],
    "skill": ["SKILL.md"],
    "env": [".env", ".env.production", ".env.local", ".env.staging"],
    "shell": ["session.log", "terminal.txt", "notes/deploy-session.txt"],
    "json": ["config.json", "appsettings.json", "config/production.json"],
    "python": ["settings.py", "clients.py", "app/config.py"],
    "js": ["config.js", "src/clients.js", "worker.js"],
    "kubeconfig": ["kubeconfig.yaml", ".kube/config"],
    "dockercfg": ["config.json", ".docker/config.json"],
    "ppk": ["deploy.ppk", "bastion.ppk", "keys/jump-host.ppk"],
}


def assign_kinds(items):
    """Each rule's items spread over at least two file kinds."""
    by_rule = {}
    for item in items:
        by_rule.setdefault(item.rule, []).append(item)
    for rule, group in by_rule.items():
        kinds = [k for k in group[0].kinds]
        R.shuffle(kinds)
        home = HOME_KIND.get(rule)
        if home:  # half of a file-bound rule's items go to its own kind of file
            kinds.remove(home)
            kinds = [home] * ((len(group) + 1) // 2) + kinds
        for n, item in enumerate(group):
            allowed = item.kinds
            choice = kinds[n % len(kinds)] if kinds[n % len(kinds)] in allowed else pick(allowed)
            item.kind = choice


HOME_KIND = {"docker-config-auth": "dockercfg", "npmrc-auth": "npmrc", "netrc-password": "netrc",
             "pgpass-password": "pgpass", "putty-private-key": "ppk", "base64-private-key": "kubeconfig"}


def positives(items):
    assign_kinds(items)
    by_kind = {}
    for item in items:
        by_kind.setdefault(item.kind, []).append(item)
    files = []
    for kind in RENDER:
        group = by_kind.get(kind, [])
        R.shuffle(group)
        render, default_name, most = RENDER[kind]
        while group:
            n = min(len(group), rint(1, most))
            chunk, group = group[:n], group[n:]
            files.append((kind, pick(FILE_NAMES.get(kind, [default_name])), render(chunk)))
    R.shuffle(files)
    return files


# ---------------------------------------------------------------------------------------------
# Negatives

JWT_IO = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
          "IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
X_STRIPE = "sk_live_" + "x" * 24
X_GOOGLE = "AIza" + "X" * 35
X_GITHUB = "ghp_" + "x" * 36
LOCAL_URLS = ["postgres://postgres:postgres@localhost:5432/dev", "amqp://guest:guest@localhost:5672/",
              "redis://localhost:6379", "mysql://root:root@127.0.0.1/test"]
MONGO_DOCS = ["mongodb+srv://<username>:<password>@cluster0.mongodb.net/", "mongodb://user:password@host:27017"]
CONFIG_WORDS_YAML = ["max_tokens: 4096", "tokenizer: cl100k_base", "secret_name: prod-db-creds",
                     "api_key_header: X-API-Key", "password_min_length: 12", "token_type: Bearer",
                     "auth_token_ttl_seconds: 3600", "api_key_env: OPENAI_API_KEY"]
KEY_PATHS = ["private_key_path: ~/.ssh/id_ed25519", "GOOGLE_APPLICATION_CREDENTIALS=/secrets/sa-key.json",
             "ssh -i ~/.ssh/deploy_key.pem", "--key-file ./certs/server.key"]

NEG_PROSE = [
    "Never paste an API key into a skill; reference the environment variable instead.",
    "The password must be at least 12 characters and is checked against the breach list.",
    "Rotate the token after every incident, and revoke the old one before closing the ticket.",
    "Secrets live in Vault under `kv/prod/{svc}`; the pod reads them through the CSI driver.",
    "A bearer token is sent in the Authorization header; the gateway rejects it after one hour.",
    "If the API key leaks, revoke it in the provider console first, then rotate the secret in Vault.",
    "The session token is stored in an HttpOnly cookie, never in local storage.",
    "Ask the platform team for a scoped token; personal tokens are not allowed in CI.",
    "The token budget per request is 4096; longer prompts are truncated from the start.",
    "The secret name, not its value, goes into the manifest.",
]


def neg_prose(ctx, n=2):
    return " ".join(fill(s, ctx) for s in R.sample(NEG_PROSE, n))


def ref_forms(var):
    """References in every key position (not values)."""
    return [f"${{{var}}}", f"$(op read op://prod/{var.lower()})", f"${var}", "<your-api-key>",
            "{{ secrets.TOKEN }}"]


def neg_env(i):
    ctx = context()
    d = Doc()
    d.add("# Copy to .env and fill in real values. Never commit the filled-in file.",
          f"APP_NAME={ctx['svc']}", "PORT=8080")
    pool = [
        [f"DATABASE_URL={LOCAL_URLS[0]}"], [f"AMQP_URL={LOCAL_URLS[1]}"], [f"REDIS_URL={LOCAL_URLS[2]}"],
        [f"MYSQL_URL={LOCAL_URLS[3]}"],
        ["SECRET_NAME=app", "DB_HOST=db1"],
        ["OPENAI_API_KEY=<your-api-key>"], [f"STRIPE_SECRET_KEY={X_STRIPE}"], ["GITHUB_TOKEN=${GITHUB_TOKEN}"],
        [f"AWS_ACCESS_KEY_ID={AWS_ID}", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}"],
        ["GOOGLE_APPLICATION_CREDENTIALS=/secrets/sa-key.json"], ["DB_PASSWORD=********"],
        ["MAX_TOKENS=4096"], ["PASSWORD_MIN_LENGTH=12"], [f"GOOGLE_MAPS_KEY={X_GOOGLE}"],
        ["API_KEY=$API_KEY"], ["SLACK_BOT_TOKEN=$(op read op://prod/slack/bot-token)"],
        ["ANTHROPIC_API_KEY=sk-ant-..."], [f"GH_TOKEN={X_GITHUB}"], ["CLIENT_SECRET=<your-client-secret>"],
        ["SESSION_SECRET=${SESSION_SECRET:?set me}"], ["SMTP_PASSWORD="], ["SECRET_NAME=prod-db-creds"],
        ["JWT_SECRET={{ secrets.TOKEN }}"], ["TOKENIZER=cl100k_base"],
    ]
    must = [pool[4], pool[i % 4], pool[5 + i % 5], pool[10 + i % 6]]
    rest = [p for p in pool if p not in must]
    chosen = must + R.sample(rest, rint(5, 8))
    R.shuffle(chosen)
    for p in chosen:
        d.add(*p)
    d.add(*[fill(b, ctx) for b in R.sample(ENV_BENIGN[5:], 3)])
    return d


def aws_credentials_block():
    return ["[default]", f"aws_access_key_id = {AWS_ID}", f"aws_secret_access_key = {AWS_SECRET}", "region = us-west-2"]


def neg_readme(i):
    ctx = context()
    d = Doc()
    d.add(f"# {ctx['svc']}", "", prose(ctx, 2), "", "## Setup", "",
          "Copy the example environment and fill in your own values:", "", "```bash", "cp .env.example .env",
          "export OPENAI_API_KEY=<your-api-key>", 'export STRIPE_SECRET_KEY="${STRIPE_SECRET_KEY}"', "```", "")
    sections = [
        ["## AWS credentials", "", "The AWS CLI reads `~/.aws/credentials`; the documentation's sample looks like this:",
         "", "```ini"] + aws_credentials_block() + ["```", ""],
        ["## Tokens", "", "A session token is a JWT. The well-known sample from jwt.io decodes to `John Doe`:", "",
         "```", JWT_IO, "```", "", neg_prose(ctx, 2), ""],
        ["## Calling the API", "", "```bash", 'curl -H "Authorization: Bearer $API_TOKEN" https://api.internal.io/v1/me',
         f'curl -H "X-API-Key: ${{API_KEY}}" https://{ctx["svc"]}.internal.io/v1/orders', "```", ""],
        ["## Databases", "", "Local development uses the compose defaults:", "", "```",
         LOCAL_URLS[0], LOCAL_URLS[2], "```", "", "For Atlas, the connection string from the docs is", "",
         f"    {MONGO_DOCS[0]}", "", f"and for a self-hosted replica `{MONGO_DOCS[1]}`.", ""],
        ["## Access", "", "```bash", "ssh -i ~/.ssh/deploy_key.pem ubuntu@bastion.prod.internal",
         "./bin/server --cert-file ./certs/server.crt --key-file ./certs/server.key", "```", ""],
        ["## Placeholders", "", f"Keys in the examples are placeholders: `{X_STRIPE}`, `{X_GOOGLE}` and `{X_GITHUB}`",
         "are not real and will be rejected by the providers.", ""],
        ["## Configuration", "", "```yaml"] + R.sample(CONFIG_WORDS_YAML, 4)
        + ["password: ********", "private_key_path: ~/.ssh/id_ed25519", "```", ""],
        ["## Kubernetes", "", "The pod reads the password from a Secret, never from the manifest:", "", "```yaml",
         "env:"] + secret_ref_block("  ", "DB_PASSWORD", "db-secret", "password") + ["```", ""],
        ["## Cluster access", "", "```yaml", "clusters:", "- cluster:",
         f"    certificate-authority-data: {b64_of_lines(cert_pem())}", "    server: https://10.0.12.4:6443",
         "  name: prod", "```", ""],
        ["## Troubleshooting", "", "Every error log line carries the request id; quote it in the ticket:", "", "```",
         f"level=error msg=\"upstream timeout\" request_id: {uuid4()} path=/v1/orders",
         f"level=warn msg=\"retrying\" request_id: {uuid4()} attempt=2", "```", ""],
        ["## Environment", "", "```dotenv", "SECRET_NAME=app", "DB_HOST=db1", "DB_PORT=5432", "```", ""],
    ]
    for sec in R.sample(sections, rint(6, 8)):
        d.add(*sec)
    d.add("## License", "", "Apache-2.0")
    return d


CLEAN_SKILLS = [
    ("release-notes", "Drafts release notes from merged pull requests since the last tag.",
     ["git fetch --tags", "git log --merges --oneline $(git describe --tags --abbrev=0)..HEAD",
      "gh pr list --state merged --base main --limit 50"]),
    ("postgres-migrations", "Writes and applies a reversible schema migration safely.",
     ["alembic revision -m \"add orders.shipped_at\"", "alembic upgrade head", "alembic downgrade -1"]),
    ("incident-triage", "First fifteen minutes of an incident: scope, stabilise, communicate.",
     ["kubectl -n prod get events --sort-by=.lastTimestamp | tail -20", "kubectl -n prod top pods"]),
    ("flaky-test-hunt", "Finds and quarantines a flaky test with repeated runs.",
     ["pytest tests/test_orders.py -k refund --count 50 -x", "git bisect start HEAD v2.3.0"]),
    ("dependency-upgrade", "Upgrades one dependency at a time and checks the changelog.",
     ["npm outdated", "npm install lodash@4.17.21 --save-exact", "npm test"]),
    ("log-search", "Searches structured logs for a request across services.",
     ["jq -c 'select(.level==\"error\")' app.log | head", "grep -R \"order_id=8812\" /var/log/app/"]),
    ("docker-image-slimming", "Shrinks a container image with multi-stage builds.",
     ["docker build -t app:slim .", "docker image ls app", "dive app:slim"]),
    ("api-pagination", "Adds cursor pagination to a list endpoint.",
     ["curl 'https://api.internal.io/v1/orders?limit=50'", "curl 'https://api.internal.io/v1/orders?cursor=abc&limit=50'"]),
    ("cron-to-systemd", "Moves a cron job to a systemd timer with logging.",
     ["systemctl list-timers", "systemctl enable --now report.timer", "journalctl -u report.service -n 50"]),
    ("benchmark-regression", "Confirms a performance regression before blaming a commit.",
     ["hyperfine './target/release/app bench' --warmup 3", "perf record -g ./target/release/app bench"]),
    ("css-audit", "Finds unused CSS and oversized bundles in the web frontend.",
     ["npx source-map-explorer dist/main.js", "npx purgecss --css dist/*.css --content dist/*.html"]),
    ("terraform-drift", "Detects and reconciles drift between state and the cloud.",
     ["terraform plan -detailed-exitcode", "terraform state list | grep aws_s3_bucket"]),
    ("git-history-cleanup", "Squashes a feature branch into reviewable commits.",
     ["git rebase -i origin/main", "git range-diff origin/main@{1} origin/main HEAD"]),
    ("csv-import", "Imports a partner CSV with validation and a dry run.",
     ["python scripts/import_csv.py partners.csv --dry-run", "wc -l partners.csv"]),
]


def clean_skill(i):
    ctx = context()
    name, desc, cmds = CLEAN_SKILLS[i % len(CLEAN_SKILLS)]
    d = Doc()
    d.add("---", f"name: {name}", f"description: {desc}", "---", "", f"# {name.replace('-', ' ').capitalize()}", "",
          desc + " " + prose(ctx, 2), "", "## When to use", "")
    d.add(*[f"- {s}" for s in R.sample(["A reviewer asks for it.", "Before a release branch is cut.",
                                         "After an alert that points at this area.", "When onboarding someone to the service.",
                                         "When a teammate reports the same problem twice."], 3)])
    d.add("", "## Steps", "")
    for n, step in enumerate(R.sample(["Read the last three changes to the area.", "Reproduce on staging first.",
                                       "Write down the expected result before running anything.",
                                       "Run the commands below and keep the output.",
                                       "Compare with the previous run and note the difference.",
                                       "Open a pull request with the findings."], 4), 1):
        d.add(f"{n}. {step}")
    d.add("", "```bash", *cmds, "```", "", "## Pitfalls", "", prose(ctx, 2), "")
    d.add(*md_benign(ctx))
    return d


def neg_skill_docs(i):
    ctx = context()
    d = Doc()
    d.add("---", f"name: {pick(['configure-llm-client', 'wire-secrets', 'ci-credentials', 'db-connection'])}",
          "description: How the service gets its credentials at run time, without putting any in files.", "---", "",
          "# Credentials without values", "", neg_prose(ctx, 3), "", "## Configuration", "", "```yaml")
    d.add(*R.sample(CONFIG_WORDS_YAML, 5), "password: ********", "api_key: ${API_KEY}", "```", "")
    d.add("## In code", "", "```python", 'client = OpenAI(api_key=os.environ["API_KEY"])',
          'password = os.environ["DB_PASSWORD"]', "token_count = 1234", "```", "", "```js",
          "const openai = new OpenAI({ apiKey: process.env.API_KEY });",
          "const db = new Pool({ password: process.env.DB_PASSWORD });", "```", "")
    extra = [
        ["## Sample values", "", f"The AWS docs use `{AWS_ID}` / `{AWS_SECRET}`; the jwt.io sample is", "", "```",
         JWT_IO, "```", ""],
        ["## Local", "", "```", *R.sample(LOCAL_URLS, 3), "```", ""],
        ["## Keys on disk", "", "```", "private_key_path: ~/.ssh/id_ed25519", "ssh -i ~/.ssh/deploy_key.pem deploy@bastion",
         "```", ""],
        ["## Placeholders", "", "```bash", f"export STRIPE_SECRET_KEY={X_STRIPE}", f"export GH_TOKEN={X_GITHUB}",
         "export SENDGRID_API_KEY=<your-api-key>", "```", ""],
        ["## In the cluster", "", "```yaml", "env:"] + secret_ref_block("  ", "API_KEY", "llm-api", "api-key")
        + secret_ref_block("  ", "DB_PASSWORD", "db-secret", "password") + ["```", ""],
    ]
    for sec in R.sample(extra, 2 + i % 4):
        d.add(*sec)
    return d


def neg_gha(i):
    ctx = context()
    d = Doc()
    d.add(f"name: {pick(['Release', 'Deploy', 'Publish'])}", "", "on:", "  push:", "    tags: ['v*']", "",
          "permissions:", "  contents: read", "  packages: write", "", "jobs:", "  release:",
          "    runs-on: ubuntu-latest", "    env:", "      NPM_TOKEN: ${{ secrets.NPM_TOKEN }}",
          "      OPENAI_API_KEY: ${{ secrets.TOKEN }}", f"      DATABASE_URL: {LOCAL_URLS[0]}",
          "      DB_PASSWORD: ${{ secrets.DB_PASSWORD }}", "      MAX_TOKENS: 4096", "    steps:",
          f"      - uses: actions/checkout@{rs(HX, 40, 'da')} # v4.2.2",
          f"      - uses: docker/login-action@{rs(HX, 40, 'da')} # v3", "        with:",
          "          registry: ghcr.io", "          username: ${{ github.actor }}",
          "          password: ${{ secrets.GITHUB_TOKEN }}")
    runs = ['echo "//registry.npmjs.org/:_authToken=${NPM_TOKEN}" > ~/.npmrc',
            'curl -fsS -H "Authorization: Bearer $DEPLOY_TOKEN" https://deploy.internal.io/hooks/release',
            'mysql -h db.prod.internal -u app -p"$MYSQL_PASSWORD" appdb < migrations/latest.sql',
            "ssh -i ~/.ssh/deploy_key.pem deploy@bastion.prod.internal ./release.sh",
            "echo \"token=$(gh auth token)\" >> $GITHUB_OUTPUT",
            f"docker pull ghcr.io/{ctx['org']}/{ctx['svc']}@sha256:{rs(HX, 64, 'da')}"]
    for r in R.sample(runs, 4):
        d.add(f"      - run: {r}")
    return d


def neg_gitlab(i):
    ctx = context()
    d = Doc()
    d.add("stages: [test, release]", "", "variables:", "  API_KEY: $API_KEY", "  DB_PASSWORD: ${DB_PASSWORD}",
          "  SECRET_NAME: prod-db-creds", "  TOKENIZER: cl100k_base", "", "test:", "  stage: test",
          f"  image: python:3.12-slim@sha256:{rs(HX, 64, 'da')}", "  services:", "    - mysql:8", "  variables:",
          f"    TEST_DATABASE_URL: {LOCAL_URLS[3]}", "  script:", "    - pytest -q", "", "release:",
          "  stage: release", "  script:",
          '    - docker login -u "$CI_REGISTRY_USER" -p "$CI_REGISTRY_PASSWORD" $CI_REGISTRY',
          '    - export VAULT_TOKEN="$(vault write -field=token auth/jwt/login role=ci jwt=$CI_JOB_JWT)"',
          f"    - curl --header \"PRIVATE-TOKEN: $GITLAB_TOKEN\" https://gitlab.com/api/v4/projects/{rint(1000, 99999)}/releases",
          "    - mysql -h db.prod.internal -u app -p\"$MYSQL_PASSWORD\" appdb -e 'select 1'",
          "  rules:", "    - if: $CI_COMMIT_TAG")
    return d


def secret_ref_block(ind, var, secret, key):
    return [f"{ind}- name: {var}", f"{ind}  valueFrom:", f"{ind}    secretKeyRef:", f"{ind}      name: {secret}",
            f"{ind}      key: {key}"]


def neg_k8s_deploy(i):
    ctx = context()
    d = Doc()
    d.add("apiVersion: apps/v1", "kind: Deployment", "metadata:", f"  name: {ctx['svc']}", f"  namespace: {ctx['ns']}",
          "spec:", "  template:", "    spec:", "      containers:", f"        - name: {ctx['svc']}",
          f"          image: ghcr.io/{ctx['org']}/{ctx['svc']}@sha256:{rs(HX, 64, 'da')}", "          env:")
    ind = "            "
    d.add(*secret_ref_block(ind, "DB_PASSWORD", "db-secret", "password"))
    d.add(*secret_ref_block(ind, "API_KEY", f"{ctx['svc']}-api", "api-key"))
    if i % 2:
        d.add(*secret_ref_block(ind, "STRIPE_SECRET_KEY", "stripe", "secret-key"))
    d.add(f"{ind}- name: MAX_TOKENS", f'{ind}  value: "4096"', f"{ind}- name: GOOGLE_APPLICATION_CREDENTIALS",
          f"{ind}  value: /secrets/sa-key.json", "          envFrom:", "            - secretRef:",
          f"                name: {ctx['svc']}-env", "          volumeMounts:", "            - name: tls",
          "              mountPath: /etc/tls", "              readOnly: true", "      volumes:", "        - name: tls",
          "          secret:", f"            secretName: {ctx['svc']}-tls", "---", "apiVersion: v1", "kind: ConfigMap",
          "metadata:", f"  name: {ctx['svc']}-config", "data:", "  secret_name: prod-db-creds",
          "  api_key_header: X-API-Key", '  password_min_length: "12"', '  max_tokens: "4096"',
          f"  request_id_header: X-Request-Id")
    return d


def neg_k8s_template(i):
    ctx = context()
    d = Doc()
    d.add("apiVersion: v1", "kind: Secret", "metadata:", "  name: {{ .Release.Name }}-db", "type: Opaque", "stringData:",
          "  password: {{ .Values.db.password | quote }}", '  api-key: "{{ secrets.TOKEN }}"',
          "  DATABASE_URL: postgres://app:${DB_PASSWORD}@db.prod.internal:5432/app",
          "  REDIS_URL: redis://:${REDIS_PASSWORD}@cache.prod.internal:6379/0", "  token: ${SERVICE_TOKEN}",
          "data:", f"  ca.crt: {b64_of_lines(cert_pem())}")
    return d


def neg_kubeconfig(i):
    ctx = context()
    d = Doc()
    d.add("apiVersion: v1", "kind: Config", "clusters:", "- cluster:",
          f"    certificate-authority-data: {b64_of_lines(cert_pem())}",
          f"    server: https://{rs(HX, 32, 'da').upper()}.gr7.eu-west-1.eks.amazonaws.com", "  name: prod",
          "contexts:", "- context:", "    cluster: prod", "    user: eks-admin", "  name: prod",
          "current-context: prod", "users:", "- name: eks-admin", "  user:")
    if i % 2 == 0:
        d.add("    exec:", "      apiVersion: client.authentication.k8s.io/v1beta1", "      command: aws",
              "      args: [eks, get-token, --cluster-name, prod, --region, eu-west-1]")
    else:
        d.add("    client-certificate: /etc/kubernetes/pki/admin.crt", "    client-key: /etc/kubernetes/pki/admin.key",
              "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token")
    return d


def neg_shell(i):
    ctx = context()
    d = Doc()
    comment = pick(["ops@acme.io", "mlindqvist@laptop", "deploy@ci"])
    blocks = [
        ["$ git log -3 --format='%H %s'"] + [f"{rs(HX, 40, 'da')} {m}" for m in
                                             ("Bump version to 2.4.1", "Fix refund rounding", "Add retry to webhook")],
        [f"$ docker pull ghcr.io/{ctx['org']}/{ctx['svc']}:2.4.1", "2.4.1: Pulling from " + ctx['org'] + "/" + ctx['svc'],
         f"Digest: sha256:{rs(HX, 64, 'da')}", f"Status: Downloaded newer image for ghcr.io/{ctx['org']}/{ctx['svc']}:2.4.1"],
        [f'$ ssh-keygen -t ed25519 -C "{comment}" -f ~/.ssh/id_ed25519 -N ""',
         "Your identification has been saved in /home/ops/.ssh/id_ed25519",
         "Your public key has been saved in /home/ops/.ssh/id_ed25519.pub", "The key fingerprint is:",
         f"SHA256:{rs(B64, 43, 'dul')} {comment}", "$ cat ~/.ssh/id_ed25519.pub", ssh_pub(comment)],
        ["$ ssh -i ~/.ssh/deploy_key.pem ubuntu@bastion.prod.internal uptime",
         " 09:41:07 up 23 days,  4:02,  0 users,  load average: 0.21, 0.18, 0.12"],
        ["$ openssl x509 -in certs/server.crt"] + cert_pem(),
        ["$ openssl rsa -in certs/server.key -pubout", "writing RSA key"] + pubkey_pem(),
        ["$ aws configure list", "      Name                    Value             Type    Location",
         "      ----                    -----             ----    --------",
         "   profile                <not set>             None    None",
         f"access_key     ****************{rs(UP + DG, 4, 'du')} shared-credentials-file",
         f"secret_key     ****************{rs(AL, 4, 'dul')} shared-credentials-file",
         "    region                eu-west-1      config-file    ~/.aws/config"],
        ["$ export API_KEY=$(op read op://prod/payments/api-key)", "$ echo ${#API_KEY}", "32"],
        ['$ curl -s -H "Authorization: Bearer $TOKEN" https://api.internal.io/health',
         f'{{"status":"ok","request_id":"{uuid4()}"}}'],
        [f"$ psql {LOCAL_URLS[0]} -c 'select 1'", " ?column? ", "----------", "        1", "(1 row)"],
        [f"$ redis-cli -u {LOCAL_URLS[2]} ping", "PONG"],
        ["$ npm view left-pad dist.integrity", f"sha512-{rb64(64)}"],
        ['$ docker run --rm -e DB_PASSWORD="${DB_PASSWORD}" -e API_KEY ' + f"ghcr.io/{ctx['org']}/{ctx['svc']}:2.4.1 migrate",
         "Applied 3 migrations."],
        ["$ ./bin/server --cert-file ./certs/server.crt --key-file ./certs/server.key --port 8443",
         "INFO listening on :8443"],
        ["$ cat ~/.aws/credentials   # the sample from the AWS docs"] + aws_credentials_block(),
        ["$ kubectl -n prod get secret db-secret", "NAME        TYPE     DATA   AGE", "db-secret   Opaque   2      41d"],
        ["$ cat .env", "SECRET_NAME=app", "DB_HOST=db1", f"REQUEST_LOG=/var/log/{ctx['svc']}/requests.log"],
    ]
    must = [blocks[i % len(blocks)], blocks[(i + 5) % len(blocks)], blocks[(i + 11) % len(blocks)]]
    rest = [b for b in blocks if b not in must]
    chosen = must + R.sample(rest, rint(2, 3))
    R.shuffle(chosen)
    d.add(f"$ cd ~/src/{ctx['svc']}")
    for b in chosen:
        d.add(*b)
    return d


def neg_dockercfg(i):
    d = Doc()
    if i == 2:
        d.add("{", '  "auths": {', '    "ghcr.io": {', '      "auth": "${REGISTRY_AUTH}"', "    }", "  }", "}")
        return d
    d.add("{", '  "auths": {', '    "ghcr.io": {},', '    "https://index.docker.io/v1/": {}', "  },",
          f'  "credsStore": "{pick(["desktop", "osxkeychain", "pass"])}",', '  "credHelpers": {',
          '    "123456789012.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login",', '    "europe-docker.pkg.dev": "gcloud"',
          "  },", '  "currentContext": "default"', "}")
    return d


def neg_npmrc(i):
    d = Doc()
    d.add("registry=https://registry.npmjs.org/", "@acme:registry=https://npm.pkg.github.com",
          "//npm.pkg.github.com/:_authToken=${GITHUB_TOKEN}", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}")
    if i % 2:
        d.add("//nexus.acme.io/repository/npm/:_auth=${NEXUS_AUTH}")
    d.add("always-auth=true", "save-exact=true")
    return d


def neg_netrc(i):
    d = Doc()
    d.add("# Template: rendered by envsubst in the CI image; never commit the rendered file.",
          "machine api.heroku.com login ops@acme.io password ${HEROKU_API_KEY}",
          "machine git.corp.io", "  login ci-bot", "  password $GIT_PASSWORD",
          "machine artifacts.acme.io login deploy password <your-password>")
    return d


def neg_json(i):
    ctx = context()
    d = Doc()
    if i % 3 == 2:
        d.add("{", '  "name": "' + ctx["svc"] + '",', '  "lockfileVersion": 3,', '  "packages": {',
              '    "node_modules/left-pad": {', '      "version": "1.3.0",',
              '      "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",',
              f'      "integrity": "sha512-{rb64(64)}"', "    },", '    "node_modules/ms": {', '      "version": "2.1.3",',
              '      "resolved": "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz",', f'      "integrity": "sha512-{rb64(64)}"',
              "    }", "  }", "}")
        return d
    d.add("{", f'  "service": "{ctx["svc"]}",', f'  "request_id": "{uuid4()}",', '  "llm": {',
          '    "model": "gpt-4o-mini",', '    "max_tokens": 4096,', '    "tokenizer": "cl100k_base",',
          '    "apiKey": "<your-api-key>"', "  },", '  "auth": {', '    "api_key_header": "X-API-Key",',
          '    "password_min_length": 12,', '    "password": "********",', '    "token": "{{ secrets.TOKEN }}",',
          '    "client_secret": "${CLIENT_SECRET}",', '    "private_key_path": "~/.ssh/id_ed25519"', "  },", '  "placeholders": {', f'    "stripe": "{X_STRIPE}",',
          f'    "google": "{X_GOOGLE}",', f'    "github": "{X_GITHUB}"', "  },", '  "database": {',
          f'    "url": "{pick(LOCAL_URLS)}",', '    "secret_name": "prod-db-creds"', "  },",
          f'  "build": {{ "commit": "{rs(HX, 40, "da")}", "image": "sha256:{rs(HX, 64, "da")}" }}', "}")
    return d


def neg_python(i):
    ctx = context()
    d = Doc()
    d.add(f'"""{ctx["svc"]} settings: every credential comes from the environment."""', "", "import os", "",
          "import tiktoken", "from openai import OpenAI", "", 'client = OpenAI(api_key=os.environ["API_KEY"])',
          'DB_PASSWORD = os.environ["DB_PASSWORD"]', 'STRIPE_KEY = os.getenv("STRIPE_SECRET_KEY", "")',
          'SSH_KEY_PATH = os.path.expanduser("~/.ssh/id_ed25519")', "private_key_path = SSH_KEY_PATH",
          'tokenizer = tiktoken.get_encoding("cl100k_base")', "MAX_TOKENS = 4096", 'SECRET_NAME = "prod-db-creds"',
          f'DATABASE_URL = os.getenv("DATABASE_URL", "{LOCAL_URLS[i % 4]}")', "", "",
          "def count_tokens(text: str) -> int:", "    token_count = len(tokenizer.encode(text))", "    return token_count",
          "", "", "# Test fixture: the public sample token from jwt.io (HS256, key 'your-256-bit-secret').",
          f'SAMPLE_JWT = "{JWT_IO}"', f'AWS_DOC_KEY_ID = "{AWS_ID}"  # from the AWS documentation',
          "token_count = 1234  # tokens in the sample prompt, checked by test_budget")
    return d


def neg_js(i):
    ctx = context()
    d = Doc()
    d.add(f"// {ctx['svc']}: configuration read from the environment", 'import OpenAI from "openai";', "",
          "const openai = new OpenAI({ apiKey: process.env.API_KEY });", "export const config = {",
          "  stripeKey: process.env.STRIPE_SECRET_KEY,", "  password: process.env.DB_PASSWORD,",
          "  maxTokens: 4096,", '  apiKeyHeader: "X-API-Key",', "  passwordMinLength: 12,",
          f'  redisUrl: process.env.REDIS_URL ?? "{LOCAL_URLS[2]}",', f'  amqpUrl: "{LOCAL_URLS[1]}",',
          f'  mongoDocs: "{MONGO_DOCS[i % 2]}",', '  token: "<your-api-key>",', "};", "",
          "export async function callApi(path, token) {",
          "  const res = await fetch(`https://api.internal.io${path}`, {",
          "    headers: { Authorization: `Bearer ${token}` },", "  });", "  return res.json();", "}")
    return d


def neg_public(i):
    d = Doc()
    kind = i % 4
    if kind == 0:
        d.add(*cert_pem())
        return d, "certs/ca.crt"
    if kind == 1:
        d.add(*pubkey_pem())
        return d, "keys/server.pub.pem"
    if kind == 2:
        for c in ("ops@acme.io", "mlindqvist@laptop", "deploy@ci"):
            d.add(ssh_pub(c))
        return d, ".ssh/authorized_keys"
    d.add("# Host keys pinned for the deploy job", f"github.com {ssh_pub('')}".rstrip(),
          f"bastion.prod.internal {ssh_pub('')}".rstrip())
    return d, ".ssh/known_hosts"


NEG = [
    (neg_env, "env", [".env.example", ".env.sample", ".env.template", ".env.dist"], 8),
    (neg_readme, "readme", ["README.md", "docs/configuration.md", "CONTRIBUTING.md"], 9),
    (clean_skill, "skill", ["SKILL.md"], 14),
    (neg_skill_docs, "skill", ["SKILL.md"], 7),
    (neg_gha, "gha", [".github/workflows/release.yml"], 6),
    (neg_gitlab, "gitlab", [".gitlab-ci.yml"], 4),
    (neg_k8s_deploy, "k8s-deploy", ["deployment.yaml", "k8s/app.yaml"], 6),
    (neg_k8s_template, "k8s-secret", ["templates/secret.yaml"], 3),
    (neg_kubeconfig, "kubeconfig", ["kubeconfig.yaml", ".kube/config"], 4),
    (neg_shell, "shell", ["session.log", "terminal.txt"], 9),
    (neg_dockercfg, "dockercfg", [".docker/config.json"], 3),
    (neg_npmrc, "npmrc", [".npmrc"], 3),
    (neg_netrc, "netrc", ["netrc.tmpl"], 2),
    (neg_json, "json", ["config.json", "lockfile-excerpt.json", "settings.json"], 6),
    (neg_python, "python", ["settings.py", "config.py"], 5),
    (neg_js, "js", ["config.js", "src/config.mjs"], 5),
]


def negatives():
    files = []
    for fn, kind, names, n in NEG:
        for i in range(n):
            files.append((kind, pick(names), fn(i)))
    for i in range(6):
        d, name = neg_public(i)
        files.append(("public-key", name, d))
    R.shuffle(files)
    return files


# ---------------------------------------------------------------------------------------------
# Self-checks: shapes of labelled values, no stray credential shapes, negative coverage.

B = r"(?<![A-Za-z0-9_])"
E = r"(?![A-Za-z0-9_])"
SHAPES = {
    "aws-access-key-id": B + r"AKIA[A-Z2-7]{16}" + E,
    "github-pat": B + r"ghp_[A-Za-z0-9]{36}" + E,
    "github-fine-grained-pat": B + r"github_pat_[A-Za-z0-9_]{82}" + E,
    "github-oauth-token": B + r"gho_[A-Za-z0-9]{36}" + E,
    "github-app-token": B + r"gh[su]_[A-Za-z0-9]{36}" + E,
    "github-refresh-token": B + r"ghr_[A-Za-z0-9]{76}" + E,
    "gitlab-pat": B + r"glpat-[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])",
    "slack-token": B + r"xoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9]{24}" + E,
    "slack-app-token": B + r"xapp-1-A[A-Z0-9]{10}-[0-9]{13}-[0-9a-f]{64}" + E,
    "slack-webhook": r"https://hooks\.slack\.com/services/T[A-Z0-9]{8,10}/B[A-Z0-9]{8,10}/[A-Za-z0-9]{24}" + E,
    "stripe-key": B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,99}" + E,
    "stripe-webhook-secret": B + r"whsec_[A-Za-z0-9]{32}" + E,
    "openai-key": B + r"sk-proj-[A-Za-z0-9_-]{80,160}(?![A-Za-z0-9_-])",
    "anthropic-key": B + r"sk-ant-api03-[A-Za-z0-9_-]{93}AA(?![A-Za-z0-9_-])",
    "google-api-key": B + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
    "npm-token": B + r"npm_[A-Za-z0-9]{36}" + E,
    "pypi-token": B + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{60,120}(?![A-Za-z0-9_-])",
    "huggingface-token": B + r"hf_[A-Za-z0-9]{34}" + E,
    "twilio-api-key": B + r"SK[0-9a-f]{32}" + E,
    "sendgrid-api-key": B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])",
    "azure-ad-client-secret": r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{34}(?![A-Za-z0-9_~.-])",
    "azure-storage-key": r"AccountKey=[A-Za-z0-9+/]{86}==",
    "azure-sas-token": r"\.blob\.core\.windows\.net/[^\s?]+\?[^\s\"']*&sig=[A-Za-z0-9%]{43,60}",
    "digitalocean-token": B + r"dop_v1_[0-9a-f]{64}" + E,
    "vault-token": B + r"hvs\.[A-Za-z0-9_-]{24,90}(?![A-Za-z0-9_-])",
    "age-secret-key": r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + E,
    "private-key": r"-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----",
    "jwt": B + r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    "putty-private-key": r"^PuTTY-User-Key-File-3: ssh-ed25519$",
    "telegram-bot-token": r"(?<![0-9])[0-9]{9}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])",
    "linear-api-key": B + r"lin_api_[A-Za-z0-9]{40}" + E,
    "databricks-token": B + r"dapi[0-9a-f]{32}" + E,
    "doppler-token": B + r"dp\.pt\.[A-Za-z0-9]{43}" + E,
    "postman-api-key": B + r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}" + E,
    "grafana-token": B + r"glsa_[A-Za-z0-9]{32}_[0-9a-f]{8}" + E,
    "groq-api-key": B + r"gsk_[A-Za-z0-9]{52}" + E,
    "perplexity-api-key": B + r"pplx-[A-Za-z0-9]{48}" + E,
    "square-token": B + r"sq0atp-[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])",
    "rubygems-token": B + r"rubygems_[0-9a-f]{48}" + E,
    "planetscale-token": B + r"pscale_tkn_[A-Za-z0-9_]{43}" + E,
    "pulumi-token": B + r"pul-[0-9a-f]{40}" + E,
    "notion-token": B + r"ntn_[0-9]{11}[A-Za-z0-9]{35}" + E,
    "heroku-api-key": B + r"HRKU-AA[A-Za-z0-9_-]{58}(?![A-Za-z0-9_-])",
    "shopify-token": B + r"shp(?:at|ca|pa|ss)_[0-9a-f]{32}" + E,
    "mailgun-api-key": r"(?:key-[0-9a-f]{32}|MAILGUN_API_KEY.*[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})" + E,
    "sentry-auth-token": r"(?:sntryu_[0-9a-f]{64}|SENTRY_AUTH_TOKEN.*(?<![0-9a-f])[0-9a-f]{64})" + E,
    "discord-bot-token": B + r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])",
    "password-in-url": r"[a-z+]+://[^:@/\s]*:[^@\s/${}<>]{12,}@(?!localhost|127\.)",
    "base64-private-key": r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{100,}",
}
# Context rules: no shape of their own; a labelled line must at least look like the context.
CONTEXT_SHAPES = {
    "generic-secret": r"(?i)(?:key|secret|token)[\"']?\s*[:=]",
    "password-field": r"(?i)passw[^\s:=]*[\"']?\s*[:=]",
    "docker-config-auth": r'^\s*"auth": "[A-Za-z0-9+/]+=*"',
    "npmrc-auth": r"_auth(?:Token)?=\S+",
    "netrc-password": r"(?:^|\s)password \S+$",
    "pgpass-password": r"(?:^|')[^:#\s']+:[0-9]+:[^:]+:[^:]+:[^\s']+(?:$|')",
    "mysql-cli-password": r"\bmysql(?:dump)? .*-p\S",
    "authorization-header": r"Authorization\"?: \"?(?:Bearer|Basic) \S+",
}
CONTEXT_RULES = set(CONTEXT_SHAPES)
KNOWN_SAMPLES = [AWS_ID, JWT_IO, X_STRIPE, X_GOOGLE, X_GITHUB]
ALL_RULES = sorted(set(SHAPES) | CONTEXT_RULES)


def stray_shapes(line):
    """Credential shapes on a line, ignoring the documented samples."""
    for s in KNOWN_SAMPLES:
        line = line.replace(s, "")
    found = [rule for rule, rx in SHAPES.items() if re.search(rx, line)]
    if "base64-private-key" in found:
        blob = re.search(SHAPES["base64-private-key"], line).group(0)
        if "PRIVATE KEY" not in base64.b64decode(blob + "=" * (-len(blob) % 4)).decode("latin-1"):
            found.remove("base64-private-key")
    for run in re.findall(r"[A-Za-z0-9+/]{100,}={0,2}", line):
        try:
            if "PRIVATE KEY" in base64.b64decode(run + "=" * (-len(run) % 4)).decode("latin-1") \
                    and "base64-private-key" not in found:
                found.append("base64-private-key")
        except ValueError:
            pass
    return found


NEG_FEATURES = {
    "aws sample id": re.escape(AWS_ID), "aws sample secret": re.escape(AWS_SECRET), "jwt.io sample": re.escape(JWT_IO),
    "x stripe": re.escape(X_STRIPE), "x google": re.escape(X_GOOGLE), "x github": re.escape(X_GITHUB),
    "${VAR}": r"\$\{[A-Z_]+\}", "$(cmd)": r"\$\([a-z]", "$VAR": r"\$[A-Z_]{3,}", "<your-api-key>": r"<your-api-key>",
    "{{ secrets.TOKEN }}": r"\{\{ secrets\.TOKEN \}\}", "process.env.API_KEY": r"process\.env\.API_KEY",
    'os.environ["API_KEY"]': r'os\.environ\["API_KEY"\]', "secretKeyRef": r"secretKeyRef:",
    "private_key_path": r"private_key_path\"?: \"?~/\.ssh/id_ed25519",
    "GOOGLE_APPLICATION_CREDENTIALS": r"GOOGLE_APPLICATION_CREDENTIALS",
    "ssh -i": r"ssh -i ~/\.ssh/deploy_key\.pem", "--key-file": r"--key-file \./certs/server\.key",
    **{f"local {u}": re.escape(u) for u in LOCAL_URLS}, **{f"mongo docs {u}": re.escape(u) for u in MONGO_DOCS},
    "SECRET_NAME=app then DB_HOST=db1": r"SECRET_NAME=app\nDB_HOST=db1\n", "masked password": r"password: \*{8}",
    "max_tokens": r"max_tokens: 4096", "token_count": r"token_count = 1234", "tokenizer": r"tokenizer: cl100k_base",
    "secret_name": r"secret_name: prod-db-creds", "api_key_header": r"api_key_header: X-API-Key",
    "password_min_length": r"password_min_length: 12", "git sha": r"(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])",
    "sha256 digest": r"sha256:[0-9a-f]{64}", "uuid request_id": r"request_id\"?:\s*\"?[0-9a-f]{8}-",
    "integrity sha512": r"sha512-[A-Za-z0-9+/]{86}==", "BEGIN CERTIFICATE": r"-----BEGIN CERTIFICATE-----",
    "BEGIN PUBLIC KEY": r"-----BEGIN PUBLIC KEY-----", "ssh-ed25519 public": r"ssh-ed25519 AAAAC3Nza",
    "certificate-authority-data": r"certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    "prose": r"(?i)\b(token|password|secret|api key)\b[^\n]*\.",
}


def check(entries):
    problems = []
    name_above = []
    counts = {}
    kinds_per_rule = {}
    for e in entries:
        lines = e["text"].split("\n")
        labelled = {}
        for x in e["expect"]:
            labelled.setdefault(x["line"], []).append(x["rule"])
        for n, line in enumerate(lines, 1):
            shapes = stray_shapes(line)
            rules = labelled.get(n, [])
            if len(rules) > 1:
                problems.append(f"{e['path']}:{n} two labels {rules}")
            for rule in rules:
                counts[rule] = counts.get(rule, 0) + 1
                kinds_per_rule.setdefault(rule, set()).add(e["kind_name"])
                if rule in SHAPES and rule not in shapes:
                    problems.append(f"{e['path']}:{n} labelled {rule} but not its shape")
                # A Kubernetes env entry names the variable on the line above its value.
                named = lines[n - 2] + "=" + line if n > 1 and "- name: " in lines[n - 2] else line
                if named != line:
                    name_above.append(f"{e['path']}:{n} {rule}")
                if rule in CONTEXT_SHAPES and not re.search(CONTEXT_SHAPES[rule], named):
                    problems.append(f"{e['path']}:{n} labelled {rule} but not in its context")
            extra = [s for s in shapes if s not in rules]
            if extra:
                problems.append(f"{e['path']}:{n} stray shape {extra} (labels {rules})")
        if len(e["text"].encode()) >= 8192:
            problems.append(f"{e['path']} is {len(e['text'].encode())} bytes")
    for rule in ALL_RULES:
        if counts.get(rule, 0) < 3 or len(kinds_per_rule.get(rule, ())) < 2:
            problems.append(f"rule {rule}: {counts.get(rule, 0)} positives in kinds {sorted(kinds_per_rule.get(rule, ()))}")
    for name, rx in NEG_FEATURES.items():
        hits = [e for e in entries if e["kind"] == "negative" and re.search(rx, e["text"])]
        kinds = {e["kind_name"] for e in hits}
        if len(hits) < 3 or len(kinds) < 2:
            problems.append(f"negative feature {name!r}: {len(hits)} files in kinds {sorted(kinds)}")
    clean = [e for e in entries if e["kind"] == "negative" and e["kind_name"] == "skill"
             and not re.search(r"(?i)token|password|secret|api.?key|\$\{|<your", e["text"])]
    if len(clean) < 10:
        problems.append(f"only {len(clean)} secret-free SKILL.md files")
    return problems, counts, kinds_per_rule, name_above


def main():
    if CASES.exists():
        shutil.rmtree(CASES)
    pos = positives(all_items())
    neg = negatives()
    entries = []
    for n, (kind, name, doc) in enumerate(pos, 1):
        entries.append({"path": f"cases/pos-{n:03d}-{kind}/{name}", "kind": "positive", "kind_name": kind,
                        "expect": sorted(doc.expect, key=lambda x: x["line"]), "text": doc.text()})
    for n, (kind, name, doc) in enumerate(neg, 1):
        entries.append({"path": f"cases/neg-{n:03d}-{kind}/{name}", "kind": "negative", "kind_name": kind,
                        "expect": [], "text": doc.text()})
    for e in entries:
        if e["kind"] == "positive" and not e["expect"]:
            sys.exit(f"{e['path']}: positive without labels")
        path = HERE / e["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(e["text"], encoding="utf-8")
    labels = {"files": [{"path": e["path"], "kind": e["kind"], "expect": e["expect"]} for e in entries]}
    (HERE / "labels.json").write_text(json.dumps(labels, indent=1) + "\n", encoding="utf-8")
    problems, counts, kinds, name_above = check(entries)
    npos = sum(e["kind"] == "positive" for e in entries)
    print(f"{len(entries)} files: {npos} positive, {len(entries) - npos} negative; "
          f"{sum(counts.values())} labelled lines")
    if "-v" in sys.argv:
        for rule in ALL_RULES:
            print(f"  {rule:26} {counts.get(rule, 0):3}  {', '.join(sorted(kinds.get(rule, ())))}")
        print("labelled values whose variable name is on the line above (- name: / value:):")
        print("\n".join("  " + x for x in name_above))
    if problems:
        print("\n".join("PROBLEM: " + p for p in problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
