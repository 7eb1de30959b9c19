"""Redaction of what reaches a model: a planted corpus of secrets in the forms they take in real
files, each of which must go, and the everyday look-alikes that must stay readable."""

from __future__ import annotations

import pytest

import secrets_corpus
from filescout.annotate.llm import ModelInput, render_file
from filescout.annotate.llm import shown_path as shown_in_annotation_prompt
from filescout.model import CHARS_PER_TOKEN
from filescout.records import Annotation
from filescout.redact import PLACEHOLDER, entropy, looks_random, redact, redact_head
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


@pytest.mark.parametrize("entry", secrets_corpus.CORPUS, ids=[entry.kind for entry in secrets_corpus.CORPUS])
def test_every_corpus_kind_is_redacted_in_the_files_that_are_read(entry: secrets_corpus.Planted) -> None:
    for path, text in entry.files.items():
        if path in entry.sensitive:
            continue  # never read: the scanner skips it by its name
        shown = f"{shown_in_annotation_prompt(path)}\n{redact(text)}"
        for secret in entry.secrets:
            assert not secrets_corpus.leaks(secret, shown), (path, secret, shown)


SIGNATURE = "Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE%2Bq8%3D"
BOT_ID = "7680639415"
TOKEN_TAIL = "Kq8Zr2Lm9Xw3Vt4Ny6Hs1JdF0gBc5Pa7Te"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("redis://:Zr9Kq2Lx7Mp4Yt@cache:6379/0", f"redis://:{PLACEHOLDER}@cache:6379/0"),
        (
            f"https://a.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig={SIGNATURE}",
            f"https://a.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig={PLACEHOLDER}",
        ),
        (
            "curl -fsS -u monitor:Q7w!e9Rt2Yx https://status.example.com/",
            f"curl -fsS -u monitor:{PLACEHOLDER} https://status.example.com/",
        ),
        ("curl --user ci:Q7we9Rt2Yx8 https://x", f"curl --user ci:{PLACEHOLDER} https://x"),
        (
            "machine api.heroku.com login ci@example.com password 0f8e7d6c-5b4a-4928",
            f"machine api.heroku.com login ci@example.com password {PLACEHOLDER}",
        ),
        (
            "machine api.heroku.com\n  password Q7we9Rt2Yx8\n",
            f"machine api.heroku.com\n  password {PLACEHOLDER}\n",
        ),
        ("db.internal:5432:shop:backup:Q7we9Rt2Yx", f"db.internal:5432:shop:backup:{PLACEHOLDER}"),
        (
            'echo "db.internal:*:*:backup:Q7we9Rt2Yx" > ~/.pgpass',
            f'echo "db.internal:*:*:backup:{PLACEHOLDER}" > ~/.pgpass',
        ),
        ("admin:$apr1$JEisSEPf$Z5lpQanIErVvwaw4SFZGK5\n", f"admin:{PLACEHOLDER}\n"),
        (
            "VALUES ('admin@example.com', '$2b$12$0ozPCDXrLiw4YcNNv3q1svUkQOmFg52zKHUmcnw.VKXC4JwcUalla')",
            f"VALUES ('admin@example.com', '{PLACEHOLDER}')",
        ),
        ('auth=("api", "key-eb9487395018f7944fe07f5679fff02e")', f'auth=("api", "{PLACEHOLDER}")'),
        (f'.token("{BOT_ID}:AA{TOKEN_TAIL[:33]}").build()', f'.token("{PLACEHOLDER}").build()'),
        (f"vault login hvs.{TOKEN_TAIL}{TOKEN_TAIL}", f"vault login {PLACEHOLDER}"),
        # random enough to be a key, whatever its name or place (detect-secrets' entropy limits)
        ('Github("Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE")', f'Github("{PLACEHOLDER}")'),
        (
            'algoliasearch("H1ABCD2EFG", "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c")',
            f'algoliasearch("H1ABCD2EFG", "{PLACEHOLDER}")',
        ),
        ("allowed:\n  - Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE\n", f"allowed:\n  - {PLACEHOLDER}\n"),
        # the whole of a 38-character tail, where detect-secrets' pattern stops at 27
        (f'client.run("MT{TOKEN_TAIL[:24]}.Gx7aB2.{TOKEN_TAIL}abc")', f'client.run("{PLACEHOLDER}")'),
    ],
)
def test_secrets_known_by_their_surroundings_keep_the_surroundings(text: str, expected: str) -> None:
    assert redact(text) == expected


HALVED = 'x = 1\nSETTINGS = {"stripe_key": "sk_live_Kka8mXFISAPcSMDyE9szcHju", "debug": false}\n'
CUT = HALVED.index("sk_live_") + len("sk_live_") + 10


def test_a_secret_the_cut_halves_goes_whole() -> None:
    assert "Kka8mXFISA" in redact(HALVED[:CUT])  # alone, the first half is not recognised
    head = redact_head(HALVED, CUT)
    assert "Kka8mXFI" not in head
    assert head == f'x = 1\nSETTINGS = {{"stripe_key": "{PLACEHOLDER}'


def test_a_head_that_halves_nothing_is_redacted_as_it_is() -> None:
    text = 'a = 1\ntoken = "Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE"\nb = 2\n'
    assert redact_head(text, text.index("b = 2")) == redact(text[: text.index("b = 2")])
    assert redact_head(text, len(text)) == redact(text)


def test_an_excerpt_cut_inside_a_key_does_not_send_its_first_half() -> None:
    budget = 200
    limit = int(budget * CHARS_PER_TOKEN)
    line = '"flags": [' + '"on", ' * 400 + "]"
    start = limit - len('"stripe_key": "sk_live_') - 10 - len("LOAD = ")
    text = f'LOAD = {line[:start]}"stripe_key": "sk_live_Kka8mXFISAPcSMDyE9szcHju", {line[start:]}\n'
    outline = Annotation(summary="Python module.", tags=[], symbols=["LOAD"])
    item = ModelInput("app/flags.py", "h", "python", "source", text, outline)
    rendered = render_file(item, budget)
    assert "content (first 1 of 2 lines" in rendered and "sk_live_" not in rendered, rendered[-200:]
    assert "Kka8mXFI" not in rendered


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
        'DEFAULT_NAMESPACE = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"',
        "docker run -u 1000:1000 shop:latest",
        "sort -u names.txt > unique.txt",
        "Listening on 127.0.0.1:8080 since 2026-11-23T10:30:00Z",
        'echo "$1$2" | cut -d: -f1',
        "The password reset flow is documented below.",
        "  password hashing\n",
        "A key-value store keeps the sessions.",
        "https://cdn.example.com/a.png?sig=v2",
        "host:port:database:username:password",
        'import "src/components/checkout/ShoppingCartItemList.tsx"',
        'factory = load("AbstractSingletonProxyFactoryBean2")',
        "description: OrderFulfilmentServiceForWarehouseRegionEU3",
        "  - ShoppingCartItemListPresenterV2\n",
        'color = "#1f6feb"',
    ],
)
def test_look_alikes_stay(text: str) -> None:
    assert redact(text) == text


def test_hashes_and_fixtures_may_go_but_the_code_around_them_stays() -> None:
    lockfile = (
        '"node_modules/left-pad": {\n  "version": "1.3.0",\n'
        '  "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",\n'
        '  "integrity": "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQTLdJNYiAn8MBKT2FGg3ZJ7JsRrT2Wd+i3ZQNYdpT8CtRA=="\n}'
    )
    commit = 'REVISION = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"  # the release this migrates from'
    assert redact(commit).startswith('REVISION = "') and redact(commit).endswith(
        "# the release this migrates from"
    )
    fixture = 'PNG_PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+A8AAQUBAScY42YAAAAASUVORK5CYII=")'
    for text in (lockfile, fixture):
        cleaned = redact(text)
        for word in (
            "node_modules/left-pad",
            '"version": "1.3.0"',
            "left-pad-1.3.0.tgz",
            "PNG_PIXEL = base64.b64decode(",
        ):
            if word in text:
                assert word in cleaned, cleaned


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
