"""Redaction of what reaches a model: a planted corpus of secrets in the forms they take in real
files, each of which must go, and the everyday look-alikes that must stay readable."""

from __future__ import annotations

import pytest

from filescout.annotate.llm import shown_path as shown_in_annotation_prompt
from filescout.redact import PLACEHOLDER, entropy, looks_random, redact
from filescout.relevance.judge import shown_paths

# (what kind, text, the secret that must not survive)
PLANTED = [
    (
        "bearer header in code",
        'headers = {"Authorization": "Bearer 7f3kQ9zLx2VbN8mRt4YwPq1sDcE6hJ0a"}\n',
        "7f3kQ9zLx2VbN8mRt4YwPq1sDcE6hJ0a",
    ),
    (
        "bearer header in a call",
        'request.add_header("Authorization", "Bearer Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE")\n',
        "Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE",
    ),
    (
        "curl basic auth",
        "curl -H 'Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1lMTIz' https://x\n",
        "YWxhZGRp",
    ),
    (
        "generic creds",
        'SERVICE_CREDS = "u9Fq2LxZ7mKp3VtR8wYs1NcB6hJd0gEa"\n',
        "u9Fq2LxZ7mKp3VtR8wYs1NcB6hJd0gEa",
    ),
    ("tfvars password", 'region  = "eu-west-1"\ndb_pass = "Xq7!mP2#vL9zR4tW"\n', "Xq7!mP2#vL9zR4tW"),
    ("aws access key id", 'aws_access_key_id = "AKIAZ4QW7TPLMN3X8KJD"\n', "AKIAZ4QW7TPLMN3X8KJD"),
    (
        "aws secret key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "wJalrXUtnFEMI/K7MDENG",
    ),
    (
        "github token",
        "GH = 'ghp_R8x2Lk9QmT4vZ7nB1cW5yH3jD6fS0aPeUoIq'\n",
        "ghp_R8x2Lk9QmT4vZ7nB1cW5yH3jD6fS0aPeUoIq",
    ),
    (
        "github fine-grained token",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP\n",
        "github_pat_11ABCDEFG",
    ),
    ("gitlab token", "export CI_PUSH=glpat-xY8zQ2mK7pL4vN9rT1wB\n", "glpat-xY8zQ2mK7pL4vN9rT1wB"),
    ("slack bot token", "slack = xoxb-2048-4096-Kq8Zr2Lm9Xw3\n", "xoxb-2048-4096-Kq8Zr2Lm9Xw3"),
    (
        "slack webhook",
        'url: "https://hooks.slack.com/services/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"\n',
        "q8Zr2Lm9Xw3Kp7Vt4Ny6Hs1J",
    ),
    (
        "private key block",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
        "-----END RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEAu1SU1",
    ),
    ("password in a URL", 'DATABASE_URL = "postgres://app:s3cr3tPa55@db.internal:5432/app"\n', "s3cr3tPa55"),
    ("redis URL", "cache: redis://default:Zr9Kq2Lx7Mp4@cache:6379/0\n", "Zr9Kq2Lx7Mp4"),
    (".env entry", "DATABASE_PASSWORD=envfilesecret123\n", "envfilesecret123"),
    (".env api key", "MAPS_API_KEY=Mq3xZ8vL1kT9pR4wY7nB\n", "Mq3xZ8vL1kT9pR4wY7nB"),
    (
        "npmrc auth token",
        "//registry.npmjs.org/:_authToken=npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5\n",
        "npm_aB3d",
    ),
    (
        "npmrc legacy token",
        "//npm.pkg.example.com/:_authToken=0f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0\n",
        "0f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0",
    ),
    (
        "kubeconfig token",
        "users:\n- name: admin\n  user:\n    token: kube7Yq2Lx9Mp4Zr8Kt3Wn6Vb1Hs5Jd0\n",
        "kube7Yq2Lx9Mp4Zr8Kt3Wn6Vb1Hs5Jd0",
    ),
    (
        "kubeconfig client key data",
        "    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB\n",
        "LS0tLS1CRUdJTiBSU0Eg",
    ),
    ("json client secret", '{"clientSecret": "c1i3ntS3cr3tV4lu3XyZ"}\n', "c1i3ntS3cr3tV4lu3XyZ"),
    ("toml api key", 'api_key = "tk_4f9a8b7c6d5e4f3a2b1c"\n', "tk_4f9a8b7c6d5e4f3a2b1c"),
    ("stripe key", 'STRIPE = "sk_live_PLANTED4eC39HqLyjWDarjtT1zdp7dc"\n', "sk_live_PLANTED"),
    ("openai key", "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456\n", "sk-proj-abc"),
    ("twilio key", 'TWILIO = "SK0123456789abcdef0123456789abcdef"\n', "SK0123456789abcdef"),
    (
        "jwt",
        "Cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
]


@pytest.mark.parametrize(("kind", "text", "secret"), PLANTED, ids=[kind for kind, _, _ in PLANTED])
def test_planted_secrets_are_redacted(kind: str, text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned, cleaned
    assert PLACEHOLDER in cleaned


def test_the_whole_corpus_at_once() -> None:
    cleaned = redact("".join(text for _, text, _ in PLANTED))
    for kind, _, secret in PLANTED:
        assert secret not in cleaned, kind


def test_names_and_structure_stay_readable() -> None:
    assert redact('db_pass = "Xq7!mP2#vL9zR4tW"') == f'db_pass = "{PLACEHOLDER}"'
    assert redact('"Authorization": "Bearer 7f3kQ9zLx2VbN8mRt4YwPq1sDcE6hJ0a"') == (
        f'"Authorization": "Bearer {PLACEHOLDER}"'
    )
    assert redact("postgres://app:s3cr3tPa55@db/app") == f"postgres://app:{PLACEHOLDER}@db/app"


@pytest.mark.parametrize(
    "text",
    [
        "token = settings.token",
        'headers = {"Authorization": f"Bearer {self.token}"}',
        "Authorization: Bearer $GITHUB_TOKEN",
        "Use bearer authentication for the internal API.",
        "auth: oauth2",
        'api_version = "v1"',
        'session_cookie_name = "sessionid"',
        'SECRET_KEY = os.environ["SECRET_KEY"]',
        'api_key: "${API_KEY}"',
        'password_reset_url = "{{ base }}/reset"',
        'cache_key = "user-profile"',
        "def authenticate(token: str) -> bool:",
        "primary_key = True",
        'region = "eu-west-1"',
        'commit = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"',
    ],
)
def test_look_alikes_stay(text: str) -> None:
    assert redact(text) == text


def test_entropy_rule() -> None:
    assert entropy("aaaa") == 0 and entropy("abcd") == 2
    assert looks_random("u9Fq2LxZ7mKp3VtR8wYs1NcB6hJd0gEa")
    assert looks_random("Xq7!mP2#vL9zR4tW")
    assert not looks_random("production_database")
    assert not looks_random("short1A")
    assert not looks_random("/var/run/secrets/token")


def test_a_secret_in_a_path_is_redacted_and_distinct() -> None:
    path = "keys/ghp_R8x2Lk9QmT4vZ7nB1cW5yH3jD6fS0aPeUoIq.py"
    assert shown_in_annotation_prompt(path) == f"keys/{PLACEHOLDER}.py"
    other = "keys/ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8.py"
    assert shown_paths([path, other, "src/app.py"]) == [
        f"keys/{PLACEHOLDER}.py",
        f"keys/{PLACEHOLDER}.py#2",
        "src/app.py",
    ]
