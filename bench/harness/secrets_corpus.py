"""A corpus of planted secrets, each kind in a file written the way it appears in real
repositories, with the exact strings that must never reach a model; and one run of it through
the whole pipeline (the server as a subprocess, the model annotating excerpts and outlines, then
findRelevant with tag picking, judging and the final ranking), checked against every request
body the local fake model server received and against every answer the client received (the
fake model writing secrets back into summaries, tags and reasons).

The secrets are made at import by a seeded generator: the corpus is the same on every run, and
this source holds no literal token that a secret scanner would flag on a push.

Used by tests/e2e/test_secrets_corpus.py (the assertions) and bench/secrets_bench.py (the figure).
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
import string
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filescout.annotate.llm import shown_path
from filescout.llm.client import CHARS_PER_TOKEN

if TYPE_CHECKING:  # the pipeline's helpers are imported by `run`: the corpus alone needs none
    from harness.fake_openai import FakeOpenAI, Request

FILE_TOKENS = 1200
EXCERPT_CHARS = int(FILE_TOKENS * CHARS_PER_TOKEN)
"""How much of a file the model gets: the longest file of the corpus is cut there."""

_rng = random.Random(20261123)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def _pick(alphabet: str, size: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(size))


def alnum(size: int) -> str:
    return _pick(ALNUM, size)


def hexs(size: int) -> str:
    return _pick(HEX, size)


def upper(size: int) -> str:
    return _pick(string.ascii_uppercase + string.digits, size)


def password(size: int = 16) -> str:
    """A generated password: letters, digits and punctuation that needs no quoting in a URL."""
    return _pick(ALNUM + "!*-_+.", size - 2) + _rng.choice("!*-_") + _rng.choice(string.digits)


def b64_bytes(size: int) -> str:
    return base64.b64encode(_rng.randbytes(size)).decode()


def uuid() -> str:
    return f"{hexs(8)}-{hexs(4)}-4{hexs(3)}-{_rng.choice('89ab')}{hexs(3)}-{hexs(12)}"


def pem_lines(prefix: str, lines: int) -> list[str]:
    """The base64 body of a key: `prefix` (the key type's fixed DER header) then random bytes."""
    body = prefix + b64_bytes(48 * lines)
    return [body[i : i + 64] for i in range(0, 64 * lines, 64)]


def pem(label: str, prefix: str, lines: int = 6) -> tuple[str, list[str]]:
    body = pem_lines(prefix, lines)
    block = "\n".join([f"-----BEGIN {label}-----", *body, f"-----END {label}-----"])
    return block, body


# What a secret starts with that says its kind and is the same in every secret of that kind: the
# random rest is what is checked, in windows of FRAGMENT characters.
PUBLIC_PREFIX = re.compile(
    r"^(?:AKIA|ASIA|gh[psuo]_|github_pat_|glpat-|xox[bpa]-|[sr]k_live_|whsec_|sk-proj-|"
    r"sk-ant-api03-|AIza|npm_|pypi-AgEIcHlwaS5vcmc|SG\.|key-|shp(?:at|ss)_|EAAA|sq0csp-|hvs\.|hf_|"
    r"django-insecure-|eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9\.|IQoJb3JpZ2luX2Vj|"
    r"LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo|MIIEowIBAAKCAQEA|MIIEvQIBADANBgkqhkiG9w0BAQEFAASC|"
    r"b3BlbnNzaC1rZXktdjEAAAAA|MHcCAQEEI|lQOYBF)"
)
FRAGMENT = 8


def fragments(secret: str) -> Iterator[str]:
    """Every run of FRAGMENT characters of the secret's random part (the whole of a short one)."""
    rest = PUBLIC_PREFIX.sub("", secret, count=1)
    if len(rest) <= FRAGMENT:
        yield rest
        return
    for start in range(len(rest) - FRAGMENT + 1):
        yield rest[start : start + FRAGMENT]


def leaks(secret: str, text: str) -> bool:
    """Whether any fragment of the secret is in `text`, in any case: a secret lower-cased into
    a tag has left all the same."""
    lowered = text.lower()
    return any(fragment.lower() in lowered for fragment in fragments(secret))


@dataclass(frozen=True)
class Planted:
    kind: str
    files: dict[str, str]
    secrets: tuple[str, ...]
    sensitive: frozenset[str] = frozenset()
    """Files whose names the scanner treats as sensitive: never read for a model."""


def _planted() -> list[Planted]:
    corpus: list[Planted] = []

    def plant(kind: str, files: dict[str, str], *secrets: str, sensitive: tuple[str, ...] = ()) -> None:
        corpus.append(Planted(kind, files, tuple(secrets), frozenset(sensitive)))

    key_id, secret_key = "AKIA" + upper(16), _pick(B64, 40)
    plant(
        "aws access key id and secret key in boto3 code",
        {
            "src/storage/s3_backup.py": (
                '"""Nightly backup of the uploads bucket to cold storage."""\n'
                "import boto3\n\n\n"
                "def backup_client():\n"
                "    return boto3.client(\n"
                '        "s3",\n'
                f'        aws_access_key_id="{key_id}",\n'
                f'        aws_secret_access_key="{secret_key}",\n'
                '        region_name="eu-west-1",\n'
                "    )\n\n\n"
                "def backup_uploads(bucket: str) -> None:\n"
                '    backup_client().copy_object(Bucket=bucket + "-cold", CopySource=bucket, Key="uploads")\n'
            )
        },
        key_id,
        secret_key,
    )

    session_id, session_secret = "ASIA" + upper(16), _pick(B64, 40)
    session_token = "IQoJb3JpZ2luX2Vj" + _pick(B64, 340)
    plant(
        "aws session token in a shell script",
        {
            "scripts/assume_release_role.sh": (
                "#!/usr/bin/env bash\n"
                "# Temporary credentials for the release role, pasted from `aws sts assume-role`.\n"
                "set -euo pipefail\n"
                f"export AWS_ACCESS_KEY_ID={session_id}\n"
                f"export AWS_SECRET_ACCESS_KEY={session_secret}\n"
                f"export AWS_SESSION_TOKEN={session_token}\n"
                "aws s3 sync ./dist s3://releases.example.com/\n"
            )
        },
        session_id,
        session_secret,
        session_token,
    )

    runbook_id, runbook_secret = "AKIA" + upper(16), _pick(B64, 40)
    plant(
        "aws shared credentials file quoted in a runbook",
        {
            "docs/runbooks/restore-backup.md": (
                "# Restoring a backup\n\n"
                "Configure the restore profile in `~/.aws/credentials`:\n\n"
                "```ini\n[restore]\n"
                f"aws_access_key_id = {runbook_id}\n"
                f"aws_secret_access_key = {runbook_secret}\n"
                "region = eu-west-1\n```\n\n"
                "Then run `make restore DATE=2026-01-31`.\n"
            )
        },
        runbook_id,
        runbook_secret,
    )

    key_hex = hexs(40)
    gcp_body = pem_lines("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 8)
    gcp_key = "\\n".join(["-----BEGIN PRIVATE KEY-----", *gcp_body, "-----END PRIVATE KEY-----", ""])
    plant(
        "gcp service-account key json",
        {
            "infra/gcp/ci-deployer-key.json": (
                "{\n"
                '  "type": "service_account",\n'
                '  "project_id": "acme-shop-prod",\n'
                f'  "private_key_id": "{key_hex}",\n'
                f'  "private_key": "{gcp_key}",\n'
                '  "client_email": "ci-deployer@acme-shop-prod.iam.gserviceaccount.com",\n'
                '  "client_id": "104857600123456789012",\n'
                '  "auth_uri": "https://accounts.google.com/o/oauth2/auth",\n'
                '  "token_uri": "https://oauth2.googleapis.com/token",\n'
                '  "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs"\n'
                "}\n"
            )
        },
        key_hex,
        *gcp_body,
    )

    account_key = b64_bytes(64)
    plant(
        "azure storage connection string",
        {
            "src/Api/appsettings.Production.json": (
                "{\n"
                '  "Logging": { "LogLevel": { "Default": "Warning" } },\n'
                '  "ConnectionStrings": {\n'
                '    "Storage": "DefaultEndpointsProtocol=https;AccountName=shopassets;'
                f'AccountKey={account_key};EndpointSuffix=core.windows.net"\n'
                "  },\n"
                '  "AllowedHosts": "*"\n'
                "}\n"
            )
        },
        account_key,
    )

    sas_signature = b64_bytes(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    plant(
        "azure sas token in a blob url",
        {
            "tools/upload_assets.py": (
                '"""Upload the built storefront assets to the public blob container."""\n'
                "from azure.storage.blob import ContainerClient\n\n"
                'CONTAINER_URL = (\n    "https://shopassets.blob.core.windows.net/public"\n'
                '    "?sv=2022-11-02&ss=b&srt=co&sp=rwdlacupiytfx&se=2026-12-31T23:59:59Z"\n'
                f'    "&st=2025-01-01T00:00:00Z&spr=https&sig={sas_signature}"\n)\n\n\n'
                "def upload(paths):\n"
                "    container = ContainerClient.from_container_url(CONTAINER_URL)\n"
                "    for path in paths:\n"
                "        with open(path, 'rb') as data:\n"
                "            container.upload_blob(path, data, overwrite=True)\n"
            )
        },
        sas_signature,
    )

    classic = "ghp_" + alnum(36)
    plant(
        "github classic token",
        {
            "scripts/release_notes.py": (
                '"""Draft release notes from the pull requests merged since the last tag."""\n'
                "from github import Github\n\n"
                f'gh = Github("{classic}")\n\n\n'
                "def merged_since(tag):\n"
                '    repo = gh.get_repo("acme/shop")\n'
                '    return [pr for pr in repo.get_pulls(state="closed") if pr.merged]\n'
            )
        },
        classic,
    )

    fine = f"github_pat_11{upper(20)}_{alnum(59)}"
    plant(
        "github fine-grained token",
        {
            "tools/sync-labels.js": (
                "// Keeps the issue labels of every repository in the organisation in step.\n"
                'const { Octokit } = require("@octokit/rest");\n\n'
                f'const octokit = new Octokit({{ auth: "{fine}" }});\n\n'
                "async function syncLabels(repo, labels) {\n"
                "  for (const label of labels) {\n"
                '    await octokit.issues.createLabel({ owner: "acme", repo, ...label });\n'
                "  }\n}\n\nmodule.exports = { syncLabels };\n"
            )
        },
        fine,
    )

    app_token = "ghs_" + alnum(36)
    plant(
        "github app installation token in a clone url",
        {
            "ci/Jenkinsfile": (
                "pipeline {\n  agent any\n  stages {\n    stage('Checkout') {\n      steps {\n"
                f"        sh 'git clone https://x-access-token:{app_token}@github.com/acme/shop.git'\n"
                "      }\n    }\n    stage('Test') {\n      steps { sh 'make test' }\n    }\n  }\n}\n"
            )
        },
        app_token,
    )

    gitlab = "glpat-" + _pick(ALNUM + "-_", 20)
    plant(
        "gitlab personal access token in a ci header",
        {
            ".gitlab-ci.yml": (
                "stages: [build, release]\n\n"
                "release:\n  stage: release\n  script:\n"
                f'    - \'curl --header "PRIVATE-TOKEN: {gitlab}" --data tag_name=$CI_COMMIT_TAG '
                "https://gitlab.example.com/api/v4/projects/42/releases'\n"
            )
        },
        gitlab,
    )

    bot = f"xoxb-{_pick(string.digits, 12)}-{_pick(string.digits, 13)}-{alnum(24)}"
    plant(
        "slack bot token",
        {
            "bots/notifier.py": (
                '"""Posts deploy and incident notices to the ops channel."""\n'
                "from slack_sdk import WebClient\n\n"
                f'client = WebClient(token="{bot}")\n\n\n'
                "def notify(text: str) -> None:\n"
                '    client.chat_postMessage(channel="#ops", text=text)\n'
            )
        },
        bot,
    )

    user = f"xoxp-{_pick(string.digits, 12)}-{_pick(string.digits, 12)}-{_pick(string.digits, 13)}-{hexs(32)}"
    plant(
        "slack user token in a curl call",
        {
            "scripts/export_channel.sh": (
                "#!/bin/sh\n# Export a channel's history for the quarterly review.\n"
                f'curl -s -H "Authorization: Bearer {user}" \\\n'
                '  "https://slack.com/api/conversations.history?channel=$1" > "history-$1.json"\n'
            )
        },
        user,
    )

    hook = alnum(24)
    plant(
        "slack incoming webhook url",
        {
            "config/alertmanager.yml": (
                "route:\n  receiver: ops\nreceivers:\n  - name: ops\n    slack_configs:\n"
                f"      - api_url: https://hooks.slack.com/services/T{upper(8)}/B{upper(10)}/{hook}\n"
                "        channel: '#alerts'\n        send_resolved: true\n"
            )
        },
        hook,
    )

    stripe = "sk_live_" + alnum(24)
    plant(
        "stripe live secret key",
        {
            "app/services/payment_gateway.rb": (
                "# Charges and refunds through Stripe.\n"
                'require "stripe"\n\n'
                f'Stripe.api_key = "{stripe}"\n\n'
                "class PaymentGateway\n"
                "  def charge(order)\n"
                "    Stripe::Charge.create(amount: order.total_cents, currency: 'eur', source: order.token)\n"
                "  end\nend\n"
            )
        },
        stripe,
    )

    restricted = "rk_live_" + alnum(99)
    plant(
        "stripe restricted key",
        {
            "workers/reports/stripeExport.ts": (
                "// Monthly export of Stripe balance transactions for accounting.\n"
                'import Stripe from "stripe";\n\n'
                f'const stripe = new Stripe("{restricted}", {{ apiVersion: "2024-06-20" }});\n\n'
                "export async function exportMonth(from: number, to: number) {\n"
                "  return stripe.balanceTransactions.list({ created: { gte: from, lt: to } });\n}\n"
            )
        },
        restricted,
    )

    webhook_secret = "whsec_" + alnum(32)
    plant(
        "stripe webhook signing secret in go",
        {
            "internal/webhooks/stripe.go": (
                "// Package webhooks verifies and dispatches Stripe events.\n"
                "package webhooks\n\n"
                'import "github.com/stripe/stripe-go/v76/webhook"\n\n'
                f'const endpointSecret = "{webhook_secret}"\n\n'
                "func Verify(payload []byte, header string) error {\n"
                "\t_, err := webhook.ConstructEvent(payload, header, endpointSecret)\n"
                "\treturn err\n}\n"
            )
        },
        webhook_secret,
    )

    twilio_key, twilio_secret = "SK" + hexs(32), alnum(32)
    plant(
        "twilio api key and secret",
        {
            "notify/sms.go": (
                "// Package notify sends order updates by SMS.\n"
                "package notify\n\n"
                'import "github.com/twilio/twilio-go"\n\n'
                "func client() *twilio.RestClient {\n"
                "\treturn twilio.NewRestClientWithParams(twilio.ClientParams{\n"
                f'\t\tUsername:   "{twilio_key}",\n'
                f'\t\tPassword:   "{twilio_secret}",\n'
                f'\t\tAccountSid: "AC{hexs(32)}",\n'
                "\t})\n}\n"
            )
        },
        twilio_key,
        twilio_secret,
    )

    sendgrid = f"SG.{_pick(B64URL, 22)}.{_pick(B64URL, 43)}"
    plant(
        "sendgrid api key",
        {
            "mailer/send.ts": (
                "// Transactional mail: order confirmations and password resets.\n"
                'import sgMail from "@sendgrid/mail";\n\n'
                f'sgMail.setApiKey("{sendgrid}");\n\n'
                "export function sendConfirmation(to: string, orderId: string) {\n"
                '  return sgMail.send({ to, from: "shop@example.com", templateId: "d-order", '
                "dynamicTemplateData: { orderId } });\n}\n"
            )
        },
        sendgrid,
    )

    mailgun = "key-" + hexs(32)
    plant(
        "mailgun api key in a requests call",
        {
            "mailer/mailgun.py": (
                '"""Newsletter delivery through Mailgun."""\n'
                "import requests\n\n\n"
                "def send_newsletter(to, subject, html):\n"
                "    return requests.post(\n"
                '        "https://api.mailgun.net/v3/mg.example.com/messages",\n'
                f'        auth=("api", "{mailgun}"),\n'
                '        data={"from": "news@example.com", "to": to, "subject": subject, "html": html},\n'
                "    )\n"
            )
        },
        mailgun,
    )

    openai_key = f"sk-proj-{_pick(B64URL, 64)}T3BlbkFJ{_pick(B64URL, 64)}"
    plant(
        "openai api key set as an environment default",
        {
            "notebooks/summarize_reviews.py": (
                '"""Summarise product reviews for the weekly digest."""\n'
                "import os\n\nfrom openai import OpenAI\n\n"
                f'os.environ.setdefault("OPENAI_API_KEY", "{openai_key}")\n'
                "client = OpenAI()\n\n\n"
                "def summarize(reviews):\n"
                '    return client.responses.create(model="gpt-4o-mini", input="\\n".join(reviews))\n'
            )
        },
        openai_key,
    )

    anthropic_key = f"sk-ant-api03-{_pick(B64URL, 93)}AA"
    plant(
        "anthropic api key",
        {
            "agent/llm.ts": (
                "// The support agent's model client.\n"
                'import Anthropic from "@anthropic-ai/sdk";\n\n'
                f'export const anthropic = new Anthropic({{ apiKey: "{anthropic_key}" }});\n'
            )
        },
        anthropic_key,
    )

    maps_key = "AIza" + _pick(B64URL, 35)
    plant(
        "google maps api key in html",
        {
            "web/public/store-locator.html": (
                "<!doctype html>\n<html>\n<head><title>Find a store</title></head>\n<body>\n"
                '  <div id="map"></div>\n'
                f'  <script src="https://maps.googleapis.com/maps/api/js?key={maps_key}&callback=initMap" '
                "async></script>\n</body>\n</html>\n"
            )
        },
        maps_key,
    )

    firebase_key = "AIza" + _pick(B64URL, 35)
    plant(
        "firebase web config",
        {
            "web/src/firebase.ts": (
                'import { initializeApp } from "firebase/app";\n\n'
                "const firebaseConfig = {\n"
                f'  apiKey: "{firebase_key}",\n'
                '  authDomain: "acme-shop.firebaseapp.com",\n'
                '  projectId: "acme-shop",\n'
                '  appId: "1:840215637214:web:6f1c0e0b9d2a4c7e",\n'
                "};\n\nexport const app = initializeApp(firebaseConfig);\n"
            )
        },
        firebase_key,
    )

    npm = "npm_" + alnum(36)
    plant(
        "npm token in .npmrc and a dockerfile",
        {
            ".npmrc": f"//registry.npmjs.org/:_authToken={npm}\n",
            "Dockerfile": (
                "FROM node:20-alpine\nWORKDIR /app\nCOPY package.json ./\n"
                f'RUN echo "//registry.npmjs.org/:_authToken={npm}" > ~/.npmrc && npm install --omit=dev\n'
                'COPY . .\nCMD ["node", "server/app.js"]\n'
            ),
        },
        npm,
        sensitive=(".npmrc",),
    )

    pypi = "pypi-AgEIcHlwaS5vcmc" + _pick(B64URL, 160)
    plant(
        "pypi upload token",
        {
            ".pypirc": f"[pypi]\nusername = __token__\npassword = {pypi}\n",
            ".github/workflows/publish.yml": (
                "name: publish\non:\n  release:\n    types: [published]\njobs:\n  upload:\n"
                "    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
                "      - run: python -m build\n"
                "      - uses: pypa/gh-action-pypi-publish@release/v1\n        with:\n"
                f"          password: {pypi}\n"
            ),
        },
        pypi,
        sensitive=(".pypirc",),
    )

    docker_auth = base64.b64encode(f"ci-bot:{password(20)}".encode()).decode()
    plant(
        "docker registry auth",
        {
            "deploy/registry/config.json": (
                '{\n  "auths": {\n    "registry.example.com": {\n'
                f'      "auth": "{docker_auth}"\n'
                "    }\n  }\n}\n"
            )
        },
        docker_auth,
    )

    claims = base64.urlsafe_b64encode(
        json.dumps({"sub": uuid(), "name": "ci", "iat": 1767225600}).encode()
    ).decode()
    jwt = f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{claims.rstrip('=')}.{_pick(B64URL, 43)}"
    plant(
        "jwt in an http request file",
        {
            "api/orders.http": (
                "### List the open orders\n"
                "GET https://api.example.com/v1/orders?status=open\n"
                f"Authorization: Bearer {jwt}\n"
                "Accept: application/json\n"
            )
        },
        jwt,
    )

    opaque = alnum(40)
    plant(
        "bearer header with an opaque token in go",
        {
            "internal/client/inventory.go": (
                "// Package client talks to the inventory service.\n"
                "package client\n\n"
                'import "net/http"\n\n'
                "func stockRequest(sku string) (*http.Request, error) {\n"
                '\treq, err := http.NewRequest("GET", "https://inventory.internal/v2/stock/"+sku, nil)\n'
                "\tif err != nil {\n\t\treturn nil, err\n\t}\n"
                f'\treq.Header.Set("Authorization", "Bearer {opaque}")\n'
                "\treturn req, nil\n}\n"
            )
        },
        opaque,
    )

    mirror = password(18)
    plant(
        "basic auth credentials in a clone url",
        {
            "scripts/mirror_repo.sh": (
                "#!/bin/sh\n# Mirror the shop repository to the backup forge every night.\n"
                f"git clone --mirror https://deploy-bot:{mirror}@git.example.com/acme/shop.git /srv/mirror\n"
                "git -C /srv/mirror push --mirror backup\n"
            )
        },
        mirror,
    )

    basic = base64.b64encode(f"admin:{password(18)}".encode()).decode()
    plant(
        "basic authorization header in a load test",
        {
            "tests/load/locustfile.py": (
                "from locust import HttpUser, task\n\n\n"
                "class Shopper(HttpUser):\n"
                "    @task\n"
                "    def browse(self):\n"
                f'        self.client.get("/admin/orders", headers={{"Authorization": "Basic {basic}"}})\n'
            )
        },
        basic,
    )

    monitor = password(16)
    plant(
        "credentials in curl -u",
        {
            "scripts/healthcheck.sh": (
                "#!/bin/sh\n# Fails the deploy when the status page does not answer.\n"
                f"curl -fsS -u monitor:{monitor} https://status.example.com/api/health || exit 1\n"
            )
        },
        monitor,
    )

    pg = password(18)
    plant(
        "postgres url password",
        {
            "docker-compose.yml": (
                "services:\n  web:\n    build: .\n    environment:\n"
                f"      DATABASE_URL: postgres://shop:{pg}@db:5432/shop\n"
                "    depends_on: [db]\n  db:\n    image: postgres:16\n"
            )
        },
        pg,
    )

    mysql = password(16)
    plant(
        "mysql url password",
        {
            "knexfile.js": (
                "// Database connections for the reporting service.\n"
                "module.exports = {\n  production: {\n    client: 'mysql2',\n"
                f"    connection: 'mysql://reporting:{mysql}@10.0.4.12:3306/shop',\n"
                "    pool: { min: 2, max: 10 },\n  },\n};\n"
            )
        },
        mysql,
    )

    mongo = password(20)
    plant(
        "mongodb srv url password",
        {
            "server/db.js": (
                "// Connects the catalogue service to its database.\n"
                'const mongoose = require("mongoose");\n\n'
                "module.exports = () =>\n"
                f'  mongoose.connect("mongodb+srv://catalogue:{mongo}@cluster0.ab1cd.mongodb.net/shop'
                '?retryWrites=true&w=majority");\n'
            )
        },
        mongo,
    )

    redis = password(24)
    plant(
        "redis url with a password and no user",
        {
            "src/worker/celeryconfig.py": (
                '"""Celery settings for the background workers."""\n\n'
                f'broker_url = "redis://:{redis}@redis.internal:6379/0"\n'
                'result_backend = "redis://redis.internal:6379/1"\n'
                "task_acks_late = True\n"
            )
        },
        redis,
    )

    amqp = password(16)
    plant(
        "amqp url password",
        {
            "cmd/consumer/main.go": (
                "// Command consumer applies stock movements from the queue.\n"
                "package main\n\n"
                'import amqp "github.com/rabbitmq/amqp091-go"\n\n'
                "func main() {\n"
                f'\tconn, err := amqp.Dial("amqp://orders:{amqp}@rabbitmq:5672/")\n'
                "\tif err != nil {\n\t\tpanic(err)\n\t}\n\tdefer conn.Close()\n}\n"
            )
        },
        amqp,
    )

    jdbc = password(14)
    plant(
        "password parameter in a jdbc url",
        {
            "src/main/java/com/acme/reports/ReportDatabase.java": (
                "package com.acme.reports;\n\nimport java.sql.Connection;\nimport java.sql.DriverManager;\n\n"
                "/** Read-only connection for the nightly sales report. */\n"
                "public final class ReportDatabase {\n"
                "    public static Connection open() throws Exception {\n"
                "        return DriverManager.getConnection(\n"
                f'            "jdbc:mysql://db.internal:3306/shop?user=report&password={jdbc}&useSSL=true");\n'
                "    }\n}\n"
            )
        },
        jdbc,
    )

    mssql = password(16)
    plant(
        "sql server connection string password",
        {
            "src/Api/appsettings.json": (
                '{\n  "ConnectionStrings": {\n'
                '    "DefaultConnection": "Server=tcp:shop.database.windows.net,1433;Database=shop;'
                f'User ID=shopadmin;Password={mssql};Encrypt=True;"\n'
                "  }\n}\n"
            )
        },
        mssql,
    )

    rsa, rsa_body = pem("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA")
    plant(
        "rsa private key in javascript",
        {
            "src/auth/sign.js": (
                "// Signs session tokens for the storefront.\n"
                'const jwt = require("jsonwebtoken");\n\n'
                f"const privateKey = `{rsa}`;\n\n"
                'module.exports = (claims) => jwt.sign(claims, privateKey, { algorithm: "RS256" });\n'
            )
        },
        *rsa_body,
    )

    ec, ec_body = pem("EC PRIVATE KEY", "MHcCAQEEI", lines=3)
    plant(
        "ec private key in a go test",
        {
            "internal/tlsutil/certs_test.go": (
                "package tlsutil\n\n"
                'import "testing"\n\n'
                f"const testKey = `{ec}`\n\n"
                "func TestLoadKey(t *testing.T) {\n"
                "\tif _, err := ParseKey([]byte(testKey)); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n"
            )
        },
        *ec_body,
    )

    ssh, ssh_body = pem("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAA", lines=7)
    plant(
        "openssh private key files",
        {
            "ansible/roles/deploy/files/deploy_key": ssh + "\n",
            "ansible/roles/deploy/files/id_ed25519": ssh + "\n",
        },
        *ssh_body,
        sensitive=("ansible/roles/deploy/files/id_ed25519",),
    )

    pgp, pgp_body = pem("PGP PRIVATE KEY BLOCK", "lQOYBF", lines=8)
    plant(
        "pgp private key block",
        {"release/signing-key.asc": pgp.replace("BLOCK-----\n", "BLOCK-----\n\n", 1) + "\n"},
        *pgp_body,
    )

    tls, tls_body = pem("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", lines=5)
    plant(
        "tls key in a kubernetes secret manifest",
        {
            "deploy/k8s/tls-secret.yaml": (
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-tls\ntype: kubernetes.io/tls\n"
                "stringData:\n  tls.key: |\n" + "".join(f"    {line}\n" for line in tls.splitlines())
            )
        },
        *tls_body,
    )

    app_key = "base64:" + b64_bytes(32)
    db_password, mail_password = password(16), password(14)
    plant(
        ".env file and its copy in a dist template",
        {
            ".env": (
                "APP_NAME=Shop\nAPP_ENV=production\n"
                f"APP_KEY={app_key}\n"
                f"DB_HOST=db.internal\nDB_USERNAME=shop\nDB_PASSWORD={db_password}\n"
                f"MAIL_PASSWORD={mail_password}\n"
            ),
            "config/app.env.dist": (
                "# Copy to .env and adjust.\nAPP_NAME=Shop\nAPP_ENV=production\n"
                f"APP_KEY={app_key}\n"
                f"DB_HOST=db.internal\nDB_USERNAME=shop\nDB_PASSWORD={db_password}\n"
                f"MAIL_PASSWORD={mail_password}\n"
            ),
        },
        app_key.removeprefix("base64:"),
        db_password,
        mail_password,
        sensitive=(".env",),
    )

    tf_db, tf_dd, tf_cf = password(20), hexs(32), _pick(ALNUM + "_-", 40)
    plant(
        "terraform variables file",
        {
            "infra/prod.tfvars": (
                'region          = "eu-west-1"\n'
                'db_instance     = "db.r6g.large"\n'
                f'db_password     = "{tf_db}"\n'
                f'datadog_api_key = "{tf_dd}"\n'
                f'cloudflare_api_token = "{tf_cf}"\n'
            )
        },
        tf_db,
        tf_dd,
        tf_cf,
    )

    tf_id, tf_secret = "AKIA" + upper(16), _pick(B64, 40)
    plant(
        "terraform provider block with inline keys",
        {
            "infra/main.tf": (
                'provider "aws" {\n'
                '  region     = "eu-west-1"\n'
                f'  access_key = "{tf_id}"\n'
                f'  secret_key = "{tf_secret}"\n'
                "}\n\n"
                'resource "aws_s3_bucket" "uploads" {\n  bucket = "acme-shop-uploads"\n}\n'
            )
        },
        tf_id,
        tf_secret,
    )

    kube_token = alnum(40)
    client_key = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo" + _pick(ALNUM, 160)
    plant(
        "kubeconfig with a token and client key data",
        {
            "deploy/kubeconfig.yaml": (
                "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n"
                "    server: https://k8s.example.com:6443\n"
                f"    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t{_pick(ALNUM, 40)}\n"
                "users:\n- name: admin\n  user:\n"
                f"    token: {kube_token}\n"
                f"    client-key-data: {client_key}\n"
                "contexts:\n- name: prod\n  context:\n    cluster: prod\n    user: admin\n"
            )
        },
        kube_token,
        client_key,
    )

    k8s_password = base64.b64encode(password(18).encode()).decode()
    k8s_token = alnum(32)
    plant(
        "kubernetes secret manifest with data and stringData",
        {
            "deploy/k8s/db-credentials.yaml": (
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\n"
                f"data:\n  username: c2hvcA==\n  password: {k8s_password}\n"
                f"stringData:\n  api-token: {k8s_token}\n"
            )
        },
        k8s_password,
        k8s_token,
    )

    helm_pg, helm_user, helm_redis = password(20), password(18), password(22)
    plant(
        "helm values",
        {
            "charts/shop/values-prod.yaml": (
                "replicaCount: 3\nimage:\n  repository: registry.example.com/shop\n  tag: 1.42.0\n"
                "postgresql:\n  auth:\n"
                f"    postgresPassword: {helm_pg}\n    username: shop\n    password: {helm_user}\n"
                "redis:\n  auth:\n    enabled: true\n"
                f'    password: "{helm_redis}"\n'
            )
        },
        helm_pg,
        helm_user,
        helm_redis,
    )

    spring_db, spring_jwt, spring_mail = password(16), b64_bytes(48), password(14)
    plant(
        "spring application.properties",
        {
            "src/main/resources/application.properties": (
                "spring.application.name=shop\n"
                "spring.datasource.url=jdbc:postgresql://db.internal:5432/shop\n"
                "spring.datasource.username=shop\n"
                f"spring.datasource.password={spring_db}\n"
                f"spring.mail.password={spring_mail}\n"
                f"app.jwt.secret={spring_jwt}\n"
                "server.port=8080\n"
            )
        },
        spring_db,
        spring_jwt,
        spring_mail,
    )

    oauth_secret, keystore = hexs(40), password(16)
    plant(
        "spring application.yml",
        {
            "src/main/resources/application.yml": (
                "spring:\n  security:\n    oauth2:\n      client:\n        registration:\n"
                "          github:\n            client-id: Iv1.8a61f9b3a7aba766\n"
                f"            client-secret: {oauth_secret}\n"
                "server:\n  ssl:\n    key-store: classpath:keystore.p12\n"
                f"    key-store-password: {keystore}\n"
            )
        },
        oauth_secret,
        keystore,
    )

    django = "django-insecure-" + _pick(string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)", 50)
    plant(
        "django settings secret key",
        {
            "shop/settings/production.py": (
                '"""Production settings for the shop."""\n'
                "from .base import *  # noqa\n\n"
                "DEBUG = False\n"
                f"SECRET_KEY = '{django}'\n"
                'ALLOWED_HOSTS = ["shop.example.com"]\n'
            )
        },
        django,
    )

    base_key, master = hexs(128), hexs(32)
    plant(
        "rails secret_key_base, master.key and secrets.yml",
        {
            "config/initializers/secret_token.rb": (
                "# Be sure to restart your server when you modify this file.\n"
                f"Rails.application.config.secret_key_base = '{base_key}'\n"
            ),
            "config/master.key": master + "\n",
            "config/secrets.yml": f"production:\n  secret_key_base: {base_key}\n",
        },
        base_key,
        master,
        sensitive=("config/master.key", "config/secrets.yml"),
    )

    heroku = uuid()
    plant(
        ".netrc and the script that writes it",
        {
            ".netrc": (
                f"machine api.heroku.com\n  login ci@example.com\n  password {heroku}\n"
                f"machine git.heroku.com\n  login ci@example.com\n  password {heroku}\n"
            ),
            "scripts/ci/write_netrc.sh": (
                "#!/bin/sh\n# Lets the CI runner push to Heroku without a prompt.\n"
                "cat > ~/.netrc <<EOF\n"
                f"machine api.heroku.com\n  login ci@example.com\n  password {heroku}\n"
                f"machine git.heroku.com login ci@example.com password {heroku}\n"
                "EOF\nchmod 600 ~/.netrc\n"
            ),
        },
        heroku,
        sensitive=(".netrc",),
    )

    pgpass = password(18)
    plant(
        ".pgpass and the backup script that writes it",
        {
            ".pgpass": f"db.internal:5432:shop:backup:{pgpass}\n",
            "scripts/backup_db.sh": (
                "#!/bin/sh\n# Dump the shop database to the backup volume.\n"
                f'echo "db.internal:5432:shop:backup:{pgpass}" > ~/.pgpass\n'
                "chmod 600 ~/.pgpass\n"
                "pg_dump -h db.internal -U backup shop > /backups/shop-$(date +%F).sql\n"
            ),
        },
        pgpass,
        sensitive=(".pgpass",),
    )

    apr = f"$apr1${_pick(ALNUM, 8)}${_pick(ALNUM + './', 22)}"
    plant(
        "htpasswd entries",
        {
            ".htpasswd": f"admin:{apr}\n",
            "docker/nginx/Dockerfile": (
                "FROM nginx:1.27-alpine\nCOPY nginx.conf /etc/nginx/nginx.conf\n"
                f"RUN echo 'admin:{apr}' > /etc/nginx/.htpasswd\n"
            ),
        },
        apr,
        sensitive=(".htpasswd",),
    )

    bcrypt = f"$2b$12${_pick(ALNUM + './', 53)}"
    plant(
        "bcrypt password hash in a seed file",
        {
            "db/seeds.sql": (
                "-- The first administrator, for a fresh database.\n"
                "INSERT INTO users (email, password_hash, role)\n"
                f"VALUES ('admin@example.com', '{bcrypt}', 'admin');\n"
            )
        },
        bcrypt,
    )

    heroku_key = uuid()
    plant(
        "heroku api key",
        {
            "scripts/heroku_release.sh": (
                "#!/bin/sh\n# Promote the staging slug to production.\n"
                f"export HEROKU_API_KEY={heroku_key}\n"
                "heroku pipelines:promote --app acme-shop-staging\n"
            )
        },
        heroku_key,
    )

    dd_api, dd_app = hexs(32), hexs(40)
    plant(
        "datadog api and application keys",
        {
            "monitoring/datadog.yaml": (
                f"api_key: {dd_api}\napp_key: {dd_app}\nsite: datadoghq.eu\n"
                "logs_enabled: true\napm_config:\n  enabled: true\n"
            )
        },
        dd_api,
        dd_app,
    )

    sentry_secret = hexs(32)
    plant(
        "sentry dsn with its secret",
        {
            "src/shop/observability.py": (
                '"""Error reporting for the web workers."""\n'
                "import sentry_sdk\n\n\n"
                "def init_sentry(release: str) -> None:\n"
                "    sentry_sdk.init(\n"
                f'        dsn="https://{hexs(32)}:{sentry_secret}@o481516.ingest.sentry.io/5907342",\n'
                "        release=release,\n        traces_sample_rate=0.1,\n    )\n"
            )
        },
        sentry_secret,
    )

    shopify_token, shopify_secret = "shpat_" + hexs(32), "shpss_" + hexs(32)
    plant(
        "shopify access token and shared secret",
        {
            "integrations/shopify/session.rb": (
                "# Admin API session for the storefront sync.\n"
                "ShopifyAPI::Context.setup(\n"
                f'  api_key: "{hexs(32)}",\n'
                f'  api_secret_key: "{shopify_secret}",\n'
                '  host: "https://acme-shop.myshopify.com",\n'
                "  is_embedded: false,\n)\n"
                f'SESSION = ShopifyAPI::Auth::Session.new(shop: "acme-shop.myshopify.com", '
                f'access_token: "{shopify_token}")\n'
            )
        },
        shopify_token,
        shopify_secret,
    )

    square_token, square_secret = "EAAA" + _pick(B64URL, 60), "sq0csp-" + _pick(B64URL, 43)
    plant(
        "square access token and application secret",
        {
            "payments/square_client.py": (
                '"""Square payments for the pop-up stores."""\n'
                "from square.client import Client\n\n"
                f'client = Client(access_token="{square_token}", environment="production")\n'
                f'OAUTH = {{"client_id": "sq0idp-{_pick(B64URL, 22)}", "client_secret": "{square_secret}"}}\n'
            )
        },
        square_token,
        square_secret,
    )

    discord = f"MT{_pick(ALNUM, 24)}.{_pick(B64URL, 6)}.{_pick(B64URL, 38)}"
    plant(
        "discord bot token",
        {
            "bots/discord_bot.py": (
                '"""Answers order-status questions on the community server."""\n'
                "import discord\n\n"
                "client = discord.Client(intents=discord.Intents.default())\n\n\n"
                "@client.event\nasync def on_ready():\n    print('ready')\n\n\n"
                f'client.run("{discord}")\n'
            )
        },
        discord,
    )

    telegram = f"{_pick(string.digits, 10)}:AA{_pick(B64URL, 33)}"
    plant(
        "telegram bot token",
        {
            "bots/telegram_bot.py": (
                '"""Order notifications for couriers on Telegram."""\n'
                "from telegram.ext import ApplicationBuilder\n\n"
                f'app = ApplicationBuilder().token("{telegram}").build()\n'
                "app.run_polling()\n"
            )
        },
        telegram,
    )

    vault = "hvs." + _pick(B64URL, 90)
    plant(
        "vault token on a command line",
        {
            "scripts/vault_login.sh": (
                "#!/bin/sh\n# Reads the deploy secrets into the environment.\n"
                f"vault login {vault}\n"
                "vault kv get -format=json secret/shop/prod > /run/shop/secrets.json\n"
            )
        },
        vault,
    )

    hf = "hf_" + alnum(34)
    plant(
        "hugging face token",
        {
            "training/push_model.py": (
                '"""Publish the fine-tuned ranking model."""\n'
                "from huggingface_hub import login, upload_folder\n\n"
                f'login(token="{hf}")\n'
                'upload_folder(folder_path="out/ranker", repo_id="acme/ranker")\n'
            )
        },
        hf,
    )

    session_secret = password(24)
    plant(
        "express session secret",
        {
            "server/app.js": (
                '// HTTP entry point of the storefront.\nconst express = require("express");\n'
                'const session = require("express-session");\n\nconst app = express();\n'
                f'app.use(session({{ secret: "{session_secret}", resave: false, saveUninitialized: false }}));\n'
                "module.exports = app;\n"
            )
        },
        session_secret,
    )

    creds = alnum(32)
    plant(
        "generic *_CREDS assignment in python",
        {
            "src/shop/api_client.py": (
                '"""Client for the billing API."""\n'
                "import urllib.request\n\n"
                f'SERVICE_CREDS = "{creds}"\n\n\n'
                "def fetch_invoices(url):\n"
                "    request = urllib.request.Request(url)\n"
                '    request.add_header("X-Service-Creds", SERVICE_CREDS)\n'
                "    return urllib.request.urlopen(request)\n"
            )
        },
        creds,
    )

    write_key, deploy_token = alnum(32), _pick(ALNUM + "-_", 28)
    plant(
        "generic token constants in javascript",
        {
            "web/src/analytics.js": (
                "// Page analytics and the preview deploy hook.\n"
                f'const SEGMENT_WRITE_KEY = "{write_key}";\n'
                f"const DEPLOY_TOKEN = '{deploy_token}';\n\n"
                "export function track(event, props) {\n"
                "  window.analytics.track(event, props);\n}\n"
            )
        },
        write_key,
        deploy_token,
    )

    go_password = password(18)
    plant(
        "generic password in a go struct literal",
        {
            "internal/db/config.go": (
                "// Package db opens the shop database.\npackage db\n\n"
                "type Config struct {\n\tHost     string\n\tUser     string\n\tPassword string\n}\n\n"
                "var Default = Config{\n"
                '\tHost:     "db.internal",\n\tUser:     "shop",\n'
                f'\tPassword: "{go_password}",\n'
                "}\n"
            )
        },
        go_password,
    )

    yaml_secret, yaml_signing = alnum(40), _pick(B64, 44)
    plant(
        "generic secrets in yaml",
        {
            "config/services.yaml": (
                "payment_service:\n  base_url: https://pay.internal\n"
                f"  client_secret: {yaml_secret}\n"
                f"  webhook_signing_key: {yaml_signing}\n"
                "  timeout_seconds: 10\n"
            )
        },
        yaml_secret,
        yaml_signing,
    )

    toml_password, toml_token = password(16), alnum(36)
    plant(
        "generic secrets in toml",
        {
            "config/production.toml": (
                '[smtp]\nhost = "smtp.example.com"\nuser = "shop"\n'
                f'password = "{toml_password}"\n\n'
                '[search]\nurl = "https://search.internal"\n'
                f'token = "{toml_token}"\n'
            )
        },
        toml_password,
        toml_token,
    )

    json_password, json_secret = password(16), _pick(B64, 44)
    plant(
        "generic secrets in json",
        {
            "config/default.json": (
                "{\n"
                f'  "db": {{ "host": "db.internal", "user": "shop", "password": "{json_password}" }},\n'
                f'  "jwtSecret": "{json_secret}",\n'
                '  "port": 8080\n'
                "}\n"
            )
        },
        json_password,
        json_secret,
    )

    ini_password, ini_smtp = password(16), password(14)
    plant(
        "generic secrets in ini",
        {
            "config/settings.ini": (
                "[database]\nhost = db.internal\nuser = shop\n"
                f"passwd = {ini_password}\n\n"
                "[mail]\nsmtp_server = smtp.example.com\n"
                f"smtp_password = {ini_smtp}\n"
            )
        },
        ini_password,
        ini_smtp,
    )

    psycopg = password(18)
    plant(
        "password keyword argument in python",
        {
            "src/shop/db.py": (
                '"""Database connections for the order service."""\n'
                "import psycopg2\n\n\n"
                "def connect():\n"
                f'    return psycopg2.connect(host="db.internal", user="orders", password="{psycopg}")\n'
            )
        },
        psycopg,
    )

    docker_env = password(20)
    plant(
        "password in a dockerfile env",
        {
            "docker/db/Dockerfile": (
                "FROM postgres:16\n"
                f"ENV POSTGRES_PASSWORD={docker_env}\n"
                "COPY init.sql /docker-entrypoint-initdb.d/\n"
            )
        },
        docker_env,
    )

    listed = [alnum(32), alnum(32)]
    plant(
        "opaque keys listed under a secret name in yaml",
        {
            "config/api_clients.yml": (
                "# Partners allowed to call the public API.\n"
                "allowed_api_keys:\n"
                + "".join(f"  - {key}\n" for key in listed)
                + "rate_limit_per_minute: 600\n"
            )
        },
        *listed,
    )

    valid = [_pick(B64URL, 40), _pick(B64URL, 40)]
    plant(
        "opaque tokens in a python list",
        {
            "src/shop/webhook_auth.py": (
                '"""Accepts webhook calls from the fulfilment partners."""\n\n'
                "VALID_TOKENS = [\n" + "".join(f'    "{token}",\n' for token in valid) + "]\n\n\n"
                "def allowed(header: str) -> bool:\n    return header in VALID_TOKENS\n"
            )
        },
        *valid,
    )

    algolia = hexs(32)
    plant(
        "admin key as a positional argument",
        {
            "scripts/reindex_search.js": (
                "// Rebuilds the product search index from the catalogue export.\n"
                'const algoliasearch = require("algoliasearch");\n\n'
                f'const client = algoliasearch("H1ABCD2EFG", "{algolia}");\n'
                'module.exports = (products) => client.initIndex("products").replaceAllObjects(products);\n'
            )
        },
        algolia,
    )

    staging = alnum(28)
    plant(
        "token quoted in a module docstring",
        {
            "src/shop/partner_api.py": (
                f'"""Client for the partner API; staging token: {staging} (rotate monthly)."""\n'
                "import httpx\n\n\n"
                "def partner_client(base_url: str) -> httpx.Client:\n"
                "    return httpx.Client(base_url=base_url)\n"
            )
        },
        staging,
    )

    # Settings a tool dumped on one long line: the excerpt is cut inside that line, here ten
    # characters into the key, which must go whole all the same.
    dumped = "sk_live_" + alnum(24)
    head = (
        '"""Feature flags and storefront settings, as the admin console exports them."""\n'
        "import json\n\n"
        + "".join(f"# flag group {n}: see docs/flags.md\n" for n in range(20))
        + "SETTINGS = json.loads('{"
    )
    flags = [f'"flag_{n}": {{"enabled": true, "rollout": {n % 100}}}, ' for n in range(200)]
    room = EXCERPT_CHARS - len(head) - len('"stripe_key": "sk_live_') - 10
    before = []
    while len("".join(before)) + len(flags[len(before)]) + 20 < room:
        before.append(flags[len(before)])
    note = "x" * (room - len("".join(before)) - len('"note": "", '))
    line = "".join([*before, f'"note": "{note}", "stripe_key": "{dumped}", ', *flags[len(before) :]])
    plant(
        "stripe key in a long settings line, cut by the excerpt",
        {"src/shop/feature_flags.py": f'{head}{line}"end": 1}}\')\n'},
        dumped,
    )

    named_token = "ghp_" + alnum(36)
    named_slack = f"xoxb-{_pick(string.digits, 12)}-{_pick(string.digits, 13)}-{alnum(24)}"
    plant(
        "secrets in file names",
        {
            f"keys/{named_token}.py": (
                '"""Loads the signing keys for webhooks."""\n\n\ndef load_keys():\n    return []\n'
            ),
            f"ops/exports/{named_slack}.json": '{"channels": ["#ops", "#alerts"]}\n',
        },
        named_token,
        named_slack,
    )

    # What a model-free summary quotes: the first line of a text file, a shell history's
    # commands, a constant's definition, the first entry of a password file.
    note_token = f"xoxb-{_pick(string.digits, 12)}-{_pick(string.digits, 13)}-{alnum(24)}"
    plant(
        "a token as the first line of a text note",
        {"notes/ops-handover.txt": f"{note_token}\nRotate it after the incident review.\n"},
        note_token,
    )

    history_secret = _pick(B64, 40)
    plant(
        "exported credentials in a shell history",
        {
            ".bash_history": (
                "cd ~/src/shop\n"
                f"export AWS_SECRET_ACCESS_KEY={history_secret}\n"
                "aws s3 ls s3://releases.example.com/\n"
            )
        },
        history_secret,
    )

    constant_token = f"xoxb-{_pick(string.digits, 12)}-{_pick(string.digits, 13)}-{alnum(24)}"
    plant(
        "a token in a module constant",
        {
            "src/notify/slack_alerts.py": (
                '"""Posts deployment alerts to the ops channel."""\n\n'
                f'SLACK = "{constant_token}"\n\n\n'
                "def post_alert(text):\n    return {'token': SLACK, 'text': text}\n"
            )
        },
        constant_token,
    )

    crypt_salt = _pick(ALNUM + "./", 16)
    sha512_crypt = f"$6${crypt_salt}${_pick(ALNUM + './', 86)}"
    yescrypt = f"$y$j9T${_pick(ALNUM + './', 22)}${_pick(ALNUM + './', 43)}"
    des_crypt = _pick(ALNUM + "./", 13)
    plant(
        "password hashes in a backup of a shadow file",
        {
            "ops/restore/shadow-backup.txt": (
                f"root:{sha512_crypt}:19000:0:99999:7:::\n"
                "daemon:*:19000:0:99999:7:::\n"
                f"deploy:{yescrypt}:19500:0:99999:7:::\n"
                f"legacy:{des_crypt}:18000:0:99999:7:::\n"
            )
        },
        sha512_crypt,
        yescrypt,
        des_crypt,
    )

    argon2 = f"$argon2id$v=19$m=65536,t=3,p=4${b64_bytes(16).rstrip('=')}${b64_bytes(32).rstrip('=')}"
    django = f"pbkdf2_sha256$600000${alnum(22)}${b64_bytes(32)}"
    phpass = f"$P$B{_pick(ALNUM + './', 30)}"
    plant(
        "password hashes of web frameworks in fixtures",
        {
            "tests/fixtures/users.json": (
                '[{"model": "auth.user", "pk": 1, "fields": {"username": "admin", '
                f'"password": "{django}"}}}}]\n'
            ),
            "db/seeds/users.sql": (
                "-- Accounts for the staging site.\n"
                f"INSERT INTO wp_users (user_login, user_pass) VALUES ('editor', '{phpass}');\n"
                f"INSERT INTO accounts (login, digest) VALUES ('ops', '{argon2}');\n"
            ),
        },
        argon2,
        django,
        phpass,
    )

    return corpus


CORPUS: list[Planted] = _planted()

# Ordinary files beside the secrets, and what must survive of them: identifiers, prose, a UUID,
# and the code around a commit hash (which, random to look at, may go).
ORDINARY: dict[str, str] = {
    "src/shop/cart.py": (
        '"""Shopping cart: add and remove items, compute totals with discounts."""\n\n'
        "class ShoppingCart:\n"
        "    def add_item(self, sku, quantity):\n        pass\n\n"
        "def apply_discount(total, code):\n    return total\n"
    ),
    "src/shop/auth.py": (
        '"""Password reset and token refresh for customer accounts."""\n\n'
        "def reset_password(user, token_store):\n"
        '    """Send a reset link; the token expires after an hour."""\n'
        "    token = token_store.issue(user)\n"
        "    return token\n\n"
        "def refresh_access_token(session):\n    return session.refresh()\n"
    ),
    "db/migrations/0007_add_order_uuid.py": (
        '"""Give every order a public identifier."""\n'
        'REVISION = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"\n'
        'DEFAULT_NAMESPACE = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"\n\n'
        "def upgrade(op):\n    op.add_column('orders', 'public_uuid')\n"
    ),
    "docs/security.md": (
        "# Security\n\nCustomer passwords are hashed with bcrypt. API tokens are rotated every "
        "ninety days and never committed; ask the platform team for a personal access token.\n"
    ),
}
SURVIVORS = (
    "ShoppingCart",
    "apply_discount",
    "reset_password",
    "refresh_access_token",
    "token_store.issue(user)",
    "Customer passwords are hashed with bcrypt",
    "REVISION = ",
    "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    "add_column",
)

# Questions that pull the planted files into findRelevant's candidates.
QUESTIONS = (
    "where are database passwords and connection urls configured (postgres mysql mongodb redis)",
    "which code sends email and sms: mailgun sendgrid twilio slack discord telegram bots",
    "payment providers stripe square shopify checkout charges and webhooks",
    "deployment credentials for kubernetes helm terraform aws gcp azure docker registry",
    "release publishing tokens for github gitlab npm pypi vault heroku",
    "private keys, certificates, ssh deploy keys and signing keys",
    "api keys for openai anthropic google maps firebase datadog sentry analytics, huggingface model training",
    "application settings and environment: django rails spring express env ini toml json yaml",
    "scripts for backups, health checks, mirrors, slack exports and load tests",
    "inventory stock requests, feature flags and the order service clients",
    "ops handover notes, shell history, slack alerts, password hashes in backups and user fixtures",
)

MODEL_OPTIONS: dict[str, Any] = {
    "model": "test-model",
    "apiKey": "test-key",
    "timeout": 5,
    "fileTokens": FILE_TOKENS,
}


def files() -> dict[str, str]:
    planted = {path: text for entry in CORPUS for path, text in entry.files.items()}
    return {**planted, **ORDINARY}


def sensitive_files() -> set[str]:
    return {path for entry in CORPUS for path in entry.sensitive}


def secrets() -> list[tuple[str, str]]:
    """(kind, secret) for every planted secret."""
    return [(entry.kind, secret) for entry in CORPUS for secret in entry.secrets]


def write_workspace(root: Path) -> Path:
    for relative, text in files().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def held_back(paths: list[str]) -> set[str]:
    """Every fourth file the model is asked about gets no answer: it keeps its structural
    annotation, so the judge also reads outlines and tags that no model wrote."""
    return {path for index, path in enumerate(sorted(paths)) if index % 4 == 3}


@dataclass
class Outcome:
    kinds: int = 0
    secrets: int = 0
    files: int = 0
    requests: dict[str, int] = field(default_factory=dict)
    leaked: list[tuple[str, str]] = field(default_factory=list)
    """(kind, secret) for each planted secret of which a fragment reached some request."""
    model_annotated: set[str] = field(default_factory=set)
    structural: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)
    sent_for_annotation: set[str] = field(default_factory=set)
    excerpted: set[str] = field(default_factory=set)
    """Files the model got the head of rather than the whole."""
    judged: set[str] = field(default_factory=set)
    found: set[str] = field(default_factory=set)
    lost: list[str] = field(default_factory=list)
    """Ordinary text that did not reach the model intact."""
    shown_leaked: list[tuple[str, str]] = field(default_factory=list)
    """(kind, secret) for each planted secret of which a fragment reached the client: in a
    summary, a tag, a reason or a prompt-ready block of findRelevant or getFiles."""
    shown_chars: int = 0
    request_chars: int = 0
    seconds: float = 0.0


def leaked_secrets(requests: list[Request]) -> list[tuple[str, str]]:
    text = "\n".join(request.raw + "\n" + request.text for request in requests)
    return [(kind, secret) for kind, secret in secrets() if leaks(secret, text)]


def leaked_to_client(text: str) -> list[tuple[str, str]]:
    """(kind, secret) for each planted secret of which a fragment is in `text`, something a
    client received, once the files' paths are taken out. A file is shown by its name, whatever
    its name holds, so that a client can open it: a secret planted in a name is left out (the
    words of a name become its file's tags too)."""
    paths = sorted(files(), key=len, reverse=True)
    for path in paths:
        text = text.replace(path, "<path>")
    return [
        (kind, secret)
        for kind, secret in secrets()
        if leaks(secret, text) and not any(secret in path for path in paths)
    ]


def echoing_secrets(fake: FakeOpenAI, quiet: set[str]) -> None:
    """Make the fake model write secrets back, as a model that knew them might (or a shared cache
    someone filled), in the form a file holds them (a bare random string in prose is what no
    redaction can tell from a word): each answered file's summary and tags quote a secret
    planted in it, and each judgement's reason quotes one too. `quiet`: the files it does not
    answer for."""
    from harness.fake_openai import FakeOpenAI

    planted = {shown_path(path): entry.secrets for entry in CORPUS for path in entry.files}

    def answer(paths: list[str], request: Request) -> dict[str, Any]:
        reply = FakeOpenAI.annotate([path for path in paths if path not in quiet], request)
        for note in reply["files"]:
            if echoed := planted.get(note["path"]):
                note["summary"] += f' It sets password = "{echoed[0]}".'
                note["tags"].append(f"password={echoed[-1]}")  # cut to 40 characters
        return reply

    def edit(kind: str, answer: Any) -> Any:
        if kind in ("judge", "final") and isinstance(answer, dict):
            for entry in answer["files"]:
                if echoed := planted.get(entry["path"]):
                    entry["reason"] += f', since it sets token = "{echoed[-1]}"'
        return answer

    fake.answer = answer
    fake.edit = edit


async def _wait_for_model(client: Any, timeout: float = 60.0) -> None:
    from harness.support import as_dict, execute

    deadline = time.monotonic() + timeout
    while True:
        status = as_dict(await execute(client, "filescout.status"))["model"]
        if status["state"] != "active" and status["queuedFiles"] == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"model annotation did not finish: {status}")
        await asyncio.sleep(0.1)


async def run(tmp: Path, fake: FakeOpenAI) -> Outcome:
    """The corpus through the whole pipeline; what reached the fake model server, what the
    client received, and what the index shows."""
    from harness.support import as_dict, start_client, stop_client, wait_for_indexing

    started = time.monotonic()
    root = write_workspace(tmp / "ws")
    readable = sorted(set(files()) - sensitive_files())
    quiet = held_back([shown_path(path) for path in readable if shown_path(path) == path])
    echoing_secrets(fake, quiet)
    fake.judge_score = lambda path: 7.0
    fake.pick_tags = lambda tags: tags[:6]
    client = await start_client(
        root, tmp / "cache", init_options={"model": {**MODEL_OPTIONS, "baseUrl": fake.base_url}}
    )
    outcome = Outcome(kinds=len(CORPUS), secrets=len(secrets()), files=len(files()))
    received: list[Any] = []  # every answer the client got
    prompt = {"tokens": 50_000}
    try:
        await wait_for_indexing(client)
        await _wait_for_model(client)
        for question in QUESTIONS:
            result = as_dict(
                await client.protocol.send_request_async(
                    "files/findRelevant",
                    {
                        "query": question,
                        "limit": 60,
                        "options": {"candidates": 120, "maxModelCalls": 20},
                        "prompt": prompt,
                    },
                )
            )
            received.append(result)
            outcome.found |= {item["path"] for item in result["items"]}
        page = as_dict(
            await client.protocol.send_request_async("files/getFiles", {"limit": 10_000, "prompt": prompt})
        )
        received.append(page)
    finally:
        await stop_client(client)
    for item in page["items"]:
        if item["status"] == "skipped":
            outcome.skipped.add(item["path"])
        elif (item["annotator"] or "").startswith("model:"):
            outcome.model_annotated.add(item["path"])
        else:
            outcome.structural.add(item["path"])
    requests = list(fake.requests)
    for request in requests:
        outcome.requests[request.kind] = outcome.requests.get(request.kind, 0) + 1
    shown = {shown_path(path): path for path in readable}
    annotate_text = "\n".join(r.text for r in requests if r.kind == "annotate")
    judge_text = "\n".join(r.text for r in requests if r.kind in ("judge", "final"))
    sections = {section.split(" (", 1)[0]: section for section in annotate_text.split("\n### ")}
    outcome.sent_for_annotation = {path for name, path in shown.items() if name in sections}
    outcome.excerpted = {
        path for name, path in shown.items() if "\ncontent (first " in sections.get(name, "")
    }
    outcome.judged = {path for name, path in shown.items() if f"\n- {name}: " in judge_text}
    outcome.leaked = leaked_secrets(requests)
    shown = json.dumps(received)
    outcome.shown_leaked = leaked_to_client(shown)
    outcome.shown_chars = len(shown)
    outcome.lost = [text for text in SURVIVORS if text not in annotate_text]
    outcome.request_chars = sum(len(r.raw) for r in requests)
    outcome.seconds = time.monotonic() - started
    return outcome
