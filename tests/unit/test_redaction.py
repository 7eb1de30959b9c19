"""Redaction of what reaches a model or a client: a planted corpus of secrets in the forms they
take in real files, each of which must go, the everyday look-alikes that must stay readable, and
the screen that lets `redact` return most texts as they are."""

from __future__ import annotations

import importlib.metadata
import random
import re
import string
from pathlib import Path

import pytest

from filescout.annotate.llm import ModelInput, render_file
from filescout.annotate.llm import shown_path as shown_in_annotation_prompt
from filescout.annotate.structural import annotate_structure
from filescout.core.records import Annotation, FileToAnnotate
from filescout.llm.client import CHARS_PER_TOKEN
from filescout.llm.redact import (
    BASE64_ALPHABET,
    CASE_FOLDS,
    HEX_ALPHABET,
    NAME_PARTS,
    OUR_NAMES,
    PLACEHOLDER,
    SCREENED_DETECT_SECRETS,
    apply_rules,
    entropy,
    looks_random,
    might_hold_secret,
    redact,
    redact_head,
)
from filescout.relevance.judge import shown_paths
from harness import secrets_corpus

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


LOOK_ALIKES = [
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
    # what the structural annotator writes about JSON, YAML and TOML files: keys, not values
    "JSON configuration. Keys: compilerOptions, include.",
    "YAML configuration. Keys: apiVersion, kind, metadata, spec.",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
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


# (what kind, text, the secret that must not survive): password hashes, which crack offline
SALT, DIGEST = (
    "Zr9Kq2Lx7Mp4Vh1u",
    "H8dC4b0tW2x9Q7m5Lk3Jp6Rn8sTa1Yz4Xc7Vb0Nm2Qw5Er8Ty1Ui4Op7As0Df3Gh6Jk9Lz2Xc5Vb8Nm1Q",
)
PASSWORD_HASHES = [
    ("md5-crypt in a shadow file", f"root:$1${SALT[:8]}${DIGEST[:22]}:19000:0:99999:7:::", DIGEST[:22]),
    ("bcrypt $2a$", f"'$2a$10${SALT}{DIGEST[:37]}'", DIGEST[:37]),
    ("bcrypt $2y$ in php", f"$hash = '$2y$12${SALT}{DIGEST[:37]}';", DIGEST[:37]),
    ("sha256-crypt with rounds", f"u:$5$rounds=80000${SALT}${DIGEST[:43]}:19000::::::", DIGEST[:43]),
    ("sha512-crypt", f"root:$6${SALT}${DIGEST}:19000:0:99999:7:::", DIGEST),
    ("locked sha512-crypt", f"bob:!$6${SALT}${DIGEST}:19000:0:99999:7:::", DIGEST),
    ("yescrypt", f"alice:$y$j9T${SALT}${DIGEST[:43]}:19000:0:99999:7:::", DIGEST[:43]),
    ("gost-yescrypt", f"alice:$gy$j9T${SALT}${DIGEST[:43]}:19000:0:99999:7:::", DIGEST[:43]),
    ("scrypt $7$", f"$7$CU..../....{SALT}${DIGEST[:43]}", DIGEST[:43]),
    ("argon2id", f'"$argon2id$v=19$m=65536,t=3,p=4${SALT}${DIGEST[:43]}"', DIGEST[:43]),
    ("argon2i", f"password_hash: $argon2i$v=19$m=4096,t=3,p=1${SALT}${DIGEST[:43]}", DIGEST[:43]),
    ("passlib scrypt", f"$scrypt$ln=16,r=8,p=1${SALT}${DIGEST[:43]}", DIGEST[:43]),
    ("passlib pbkdf2", f"$pbkdf2-sha256$29000${SALT}${DIGEST[:43]}", DIGEST[:43]),
    ("sun md5-crypt", f"$md5,rounds=5000${SALT[:8]}$${DIGEST[:22]}", DIGEST[:22]),
    ("phpass (WordPress)", f"('admin', '$P$B{DIGEST[:30]}')", DIGEST[:30]),
    ("drupal 7", f"$S$D{DIGEST[:51]}", DIGEST[:51]),
    ("django pbkdf2", f'"password": "pbkdf2_sha256$600000${SALT}${DIGEST[:43]}="', DIGEST[:43]),
    ("django argon2", f"argon2$argon2id$v=19$m=102400,t=2,p=8${SALT}${DIGEST[:22]}", DIGEST[:22]),
    ("django bcrypt", f"bcrypt_sha256$$2b$12${SALT}{DIGEST[:37]}", DIGEST[:37]),
    ("des-crypt in a shadow file", "daemon:Zr9Kq2Lx7Mp4V:19000:0:99999:7:::", "Zr9Kq2Lx7Mp4V"),
    ("des-crypt in a passwd file", "root:Zr9Kq2Lx7Mp4V:0:0:root:/root:/bin/bash", "Zr9Kq2Lx7Mp4V"),
    ("ldap ssha", f"userPassword: {{SSHA}}{DIGEST[:32]}==", DIGEST[:32]),
    ("htpasswd sha", f"admin:{{SHA}}{DIGEST[:27]}=", DIGEST[:27]),
]


@pytest.mark.parametrize(
    ("kind", "text", "secret"), PASSWORD_HASHES, ids=[kind for kind, _, _ in PASSWORD_HASHES]
)
def test_password_hashes_are_redacted(kind: str, text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned and secret[:8] not in cleaned, cleaned
    assert PLACEHOLDER in cleaned


HASH_LOOK_ALIKES = [
    "daemon:*:19000:0:99999:7:::",
    "nobody:!:19000::::::",
    "www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin",
    "Prices start at $5 a seat, $2 for students.",
    "cp ${HOME}/bin/tool $PREFIX/bin/",
    "{Build} {Test} {Deploy}",
    "10:30:00 up 3 days, 2 users, load average: 0.41, 0.23, 0.10",
]


@pytest.mark.parametrize("text", HASH_LOOK_ALIKES)
def test_what_only_looks_like_a_password_file_stays(text: str) -> None:
    assert redact(text) == text


SLACK = "xoxb-2048-4096-Kq8Zr2Lm9Xw3Tq7Yb"
AWS_SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Text document: {SLACK}.", SLACK),
        (f"text configuration: export AWS_SECRET_ACCESS_KEY={AWS_SECRET}.", AWS_SECRET),
        (f'defines `SLACK` (SLACK = "{SLACK}"), which matches slack', SLACK),
        (f"bak file: root:$6${SALT}${DIGEST}:19000:0:99999:7:::.", DIGEST),
        (f"{SLACK.lower()}", SLACK.lower()),  # lower-cased into a tag
        (f"password=$p$b{DIGEST[:30].lower()}"[:40], DIGEST[:20].lower()),  # a phpass hash, as a tag
        ("{ssha}" + DIGEST[:32].lower() + "==", DIGEST[:20].lower()),
    ],
)
def test_what_a_client_is_shown_about_a_file_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text)


# -- the screen: `redact` returns a text unchanged when nothing in it could be a secret ---------


def fold_variants(text: str) -> list[str]:
    """The text with letters swapped for the characters a case-insensitive rule takes for them."""
    return [
        text.replace(a, b)
        for a, b in (("s", "\u017f"), ("k", "\u212a"), ("i", "\u0131"), ("I", "\u0130"))
        if a in text
    ]


def screened_texts() -> list[str]:
    """Texts that need redaction and texts that do not, in the forms a client is shown them."""
    texts = [text for _, text, _ in PLANTED] + LOOK_ALIKES + HASH_LOOK_ALIKES
    texts += [text for _, text, _ in PASSWORD_HASHES]
    texts += list(secrets_corpus.ORDINARY.values())
    for entry in secrets_corpus.CORPUS:
        for text in entry.files.values():
            texts += [text, *text.splitlines()]
    shown = []
    for text in texts:
        shown += [text, f"Text document: {text[:300]}.", text.lower(), text.upper()]
        shown += [text[: len(text) // 2], text[len(text) // 2 :], *fold_variants(text)]
    return shown


def random_texts(count: int, seed: int = 25) -> list[str]:
    """Pieces of secrets, names and separators thrown together: shapes no corpus thought of."""
    rng = random.Random(seed)
    pieces = [
        *"=:'\"` -_./$@{}[]\n\t,;?&",
        "password", "passwd", "Password ", "token", "Bearer ", "basic ", "digest ", "aws_", "secret",
        "api_key", "key-", "sig=", " -u ", "--user ", "login ", "machine ", "://", "@", "==", "=>",
        "sk-", "sk_live_", "xoxb-", "XOXP-", "AKIA", "AIza", "ya29.", "eyJ", "ghp_", "github_pat_",
        "glpat-", "npm_", "NPM_TOKEN", "_authToken", "hf_", "SG.", "hvs.", "dop_v1_", "shpat_",
        "-----BEGIN ", "BEGIN RSA PRIVATE KEY", "PuTTY-User-Key-File-2:", "sq0csp-", "AC", "SK",
        "$2b$12$", "$6$", "$y$", "$argon2id$", "pbkdf2_sha256$", "{SSHA}", "root:", ":0:0:",
        ":19000:0:", ":5432:", ":AA", "-us7", "cloudant", "ibm_", "softlayer", "\u017f", "\u212a", "\u0131", "\u0130",
    ]  # fmt: skip
    alphabets = (string.ascii_letters + string.digits, string.hexdigits, string.ascii_lowercase, "+/=_-.")
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(2, 9)):
            if rng.random() < 0.5:
                parts.append(rng.choice(pieces))
            else:
                alphabet = rng.choice(alphabets)
                parts.append(
                    "".join(rng.choice(alphabet) for _ in range(rng.choice((4, 9, 12, 17, 24, 41, 90))))
                )
        texts.append("".join(parts))
    return texts


def own_sources() -> list[str]:
    root = Path(__file__).resolve().parents[2]
    lines = []
    for path in sorted((root / "server" / "filescout").rglob("*.py")):
        lines += path.read_text(encoding="utf-8").splitlines()
    return lines


@pytest.mark.parametrize("source", ["planted", "random", "own sources"])
def test_the_screen_lets_through_only_what_no_rule_would_change(source: str) -> None:
    texts = {"planted": screened_texts, "random": lambda: random_texts(20_000), "own sources": own_sources}[
        source
    ]()
    changed = 0
    for text in texts:
        cleaned = apply_rules(text)
        changed += cleaned != text
        if not might_hold_secret(text):
            assert cleaned == text, (text, cleaned)
        assert redact(text) == cleaned
    if source != "own sources":
        assert changed > len(texts) // 10  # the check has secrets to miss


def test_ordinary_summaries_pass_the_screen() -> None:
    root = Path(__file__).resolve().parents[2]
    sources = sorted((root / "server" / "filescout").rglob("*.py"))
    summaries = []
    for path in sources:
        item = FileToAnnotate(str(path.relative_to(root)), "h", "python", "source", path.read_text())
        annotation = annotate_structure(item, with_words=False)
        summaries += [annotation.summary, "\n".join(annotation.tags)]
    flagged = [text for text in summaries if might_hold_secret(text)]
    assert len(flagged) <= len(summaries) // 20, flagged


def test_the_screen_knows_the_rules_it_screens_for() -> None:
    """The screen was derived from detect-secrets' detectors of one version: with another, every
    text gets every rule until the screen is checked against the new detectors."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
    from detect_secrets.plugins.keyword import DENYLIST

    assert importlib.metadata.version("bc-detect-secrets") == SCREENED_DETECT_SECRETS
    assert set(HEX_ALPHABET) == set(HexHighEntropyString().charset)
    assert set(BASE64_ALPHABET) == set(Base64HighEntropyString().charset)
    assert (HexHighEntropyString().entropy_limit, Base64HighEntropyString().entropy_limit) == (3.0, 4.5)
    bare = re.compile(r"\[[^\]]*\]\??|\\[bw.\-]|[().*?|]")
    for name in (*OUR_NAMES.split("|"), *DENYLIST):
        assert NAME_PARTS.search(bare.sub("", name).lower()), name  # every name holds a part
    folded = {chr(c) for c in range(128, 0x110000) if re.fullmatch("[a-z]", chr(c), re.IGNORECASE)}
    assert folded == set(CASE_FOLDS)
