"""Remove secret-looking strings from text before it leaves the machine.

Applied to every piece of workspace content placed in a model prompt (file excerpts, outlines,
summaries, paths). Sensitive files never get this far; this catches the key pasted into a config
file or a test fixture. Patterns favour catching too much: a redacted placeholder costs the model
little.

Five layers:
- the token catalogue of `bc-detect-secrets` (Bridgecrew's maintained fork of Yelp's
  detect-secrets: AWS, Azure, Slack, Twilio, npm, JWT, private keys, ...), used as a library of
  regular expressions over the whole text, and our own patterns for tokens it does not know;
- its high-entropy strings (base64 and hex at its default limits), quoted, ending a `key: value`
  line, or listed as YAML items: the keys that have neither a known shape nor a telling name;
- secrets that their surroundings give away: passwords in URLs (`redis://:pw@host` too), in
  `curl -u`, .netrc and .pgpass lines, Azure SAS signatures, and `Authorization: Bearer/Basic/
  Token` credentials;
- assignments to a name that says secret (`password`, `db_pass`, `api_key`, `client_secret` and
  the keywords detect-secrets knows): the value goes, whatever it looks like;
- assignments to a name that hints at one (`SERVICE_CREDS`, `auth`, `private`, `client-key-data`,
  ...) in code, .env, .tfvars, .npmrc, YAML, JSON or TOML: the value goes when it is long and
  random-looking (Shannon entropy), so `auth: oauth2` stays readable.
The name rules only look at lines that contain one of the names, so redaction stays cheap.
`redact_head` redacts an excerpt as if the text went on, so a key the cut halves goes whole.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache

PLACEHOLDER = "[REDACTED]"
HEAD_SLACK = 2048
"""How far past a cut `redact_head` reads: more than a JWT or an AWS session token takes (a PEM
block's pattern runs to the end of the text anyway)."""

# Whole-match patterns: the entire match is a secret.
TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.DOTALL)
    for pattern in (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI
        r"\bsk-ant-[A-Za-z0-9_\-]{20,}",  # Anthropic
        r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
        r"\bwhsec_[A-Za-z0-9]{20,}",  # webhook secrets
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b",  # AWS access key ids
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
        r"\bgithub_pat_[A-Za-z0-9_]{40,}",
        r"\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
        r"\bgl(?:dt|ft|rt|ptt|cbt|soat|imt)-[A-Za-z0-9_\-]{20,}",  # other GitLab tokens
        r"\bxox[abposre]-[A-Za-z0-9\-]{10,}",  # Slack
        r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
        r"\bya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth
        r"\bnpm_[A-Za-z0-9]{36}\b",  # npm
        r"\bpypi-[A-Za-z0-9_\-]{50,}",  # PyPI
        r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
        r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",  # JWTs
        r"\bdop_v1_[a-f0-9]{64}\b",  # DigitalOcean
        r"\b(?:shpat|shpss|shpca|shppa)_[a-fA-F0-9]{32}\b",  # Shopify
    )
)

# One pass for all of them, without the leading word boundaries (they keep the regex engine from
# skipping ahead to a possible first character, a tenfold cost): `_word_start` checks them after.
TOKENS = re.compile(
    "|".join(f"(?:{pattern.pattern.removeprefix(chr(92) + 'b')})" for pattern in TOKEN_PATTERNS), re.DOTALL
)

# Whole-match patterns whose first characters are common (a digit, a capital, `$`): each in a
# pass of its own, since in the one above they would make every position a possible start.
SEPARATE_TOKENS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"key-[0-9a-f]{32}\b",  # Mailgun
        r"hv[sbr]\.[A-Za-z0-9_\-]{24,}",  # HashiCorp Vault
        r"\d{8,10}:AA[A-Za-z0-9_\-]{33}",  # Telegram bots
        # Discord bots: detect-secrets' pattern stops 27 characters into the 38 of today's tokens
        r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}",
        r"\$(?:apr1|2[abxy]?|[156]|7|y)\$[A-Za-z0-9./$=]{20,}",  # crypt(3) hashes: htpasswd, bcrypt
    )
)

# detect-secrets detectors left out: BasicAuth (URL_PASSWORD keeps the URL readable) and any
# that flag what is not a secret (public IP addresses).
SKIPPED_DETECTORS = frozenset({"BasicAuthDetector", "IPPublicDetector"})

# A password in a URL: keep scheme, user (if any: `redis://:password@host`) and host.
URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*:)([^@\s/]+)(@)")

# Secrets that detect-secrets has no detector for, where what surrounds them says what they are:
# group 1 goes, the rest stays readable.
CONTEXT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (  # each starts with a literal, which the regex engine skips ahead to
        r"sig=(?<=[?&]sig=)([A-Za-z0-9%+/=]{16,})",  # Azure shared access signatures
        r"-(?<=\s-)(?:u\s*|-user[=\s]\s*)[\"']?[^\s:\"'@/]+:([^\s\"'@]{6,})",  # curl -u user:password
        # .pgpass lines, `host:port:database:user:password`, also inside the echo that writes one
        r":(?<=[\w.*\-]:)(?:\d{1,5}|\*):[\w.\-*]+:[\w.\-*]+:([^\s\"':]{4,})",
    )
)

# .netrc: `machine host login user password secret`, on one line or one per line.
NETRC_PASSWORD = re.compile(
    r"(?i)((?:^\s*|\blogin\s+\S+\s+)(?:password|passwd)\s+)(\S+)"
    r"(?=\s*$|\s+(?:machine|login|account|macdef|default)\b)"
)

# `Authorization: Bearer <token>`, `Basic <base64>`, `Token <token>`: keep the scheme.
AUTH_SCHEME = re.compile(r"(?i)\b((?:bearer|basic|token|digest)\s+)([A-Za-z0-9._~+/=\-]{12,})")

# Names that say secret: the value is dropped whatever it looks like.
OUR_NAMES = (
    r"password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|"
    r"client[_\-]?secret|auth[_\-]?token|credential|signing[_\-]?key|passphrase|creds\b"
)
# Name parts that hint at a secret: the value is dropped when it looks random.
HINTS = r"key|token|secret|pass|pwd|cred|auth|api|private|salt|sign|cookie|session"
# Every name above contains one of these (lowercase): a line without any is not looked at.
NAME_PARTS = re.compile(rf"{HINTS}|pw|contrase")
# How detect-secrets spells `keyword = value` detectors (`build_assignment_regex`): they only
# match on a line with a secret name, so they run on those lines only.
ASSIGNMENT_DETECTOR = r"(?:(?<=\W)|(?<=^))"

# Values that are plainly not secrets (references, placeholders).
NOT_A_SECRET = re.compile(
    r"^(?:\$\{?|%\(|\{\{|<|os\.|process\.env|env\(|getenv|None$|null$|true$|"
    r"false$|self\.|this\.|settings\.|config\.|\*+$|x+$|changeme$|your[_\-])",
    re.IGNORECASE,
)
NOT_RANDOM = re.compile(r"^(?:/|\./|\.\./|~/)|://|\$\{|\{\{|%\(")


@cache
def _detector_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    """The regular expressions of detect-secrets' token detectors: (those for any text, those
    for `keyword = value` lines). Imported on first use: the package costs a tenth of a second
    to import, paid only when something is sent to a model."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    anywhere: list[re.Pattern[str]] = []
    assignments: list[re.Pattern[str]] = []
    for detector in get_mapping_from_secret_type_to_class().values():
        if issubclass(detector, RegexBasedDetector) and detector.__name__ not in SKIPPED_DETECTORS:
            for pattern in detector().denylist:
                if pattern.pattern.startswith(ASSIGNMENT_DETECTOR):
                    assignments.append(pattern)
                else:
                    anywhere.append(pattern)
    return tuple(anywhere), tuple(assignments)


@dataclass(frozen=True)
class EntropyRule:
    """detect-secrets' high-entropy strings: a run of an alphabet that is quoted, follows a `:`
    or `=` to the end of its line, or is a YAML list item goes when its entropy passes the limit
    of a plugin whose alphabet holds it. One pass over the union of the alphabets finds the runs
    that each plugin's pattern would find."""

    patterns: tuple[re.Pattern[str], ...]
    checks: tuple[tuple[frozenset[str], Callable[[str], float], float], ...]

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        for pattern in self.patterns:
            for match in pattern.finditer(text):
                value = match.group(2)
                if any(
                    alphabet.issuperset(value) and entropy(value) > limit
                    for alphabet, entropy, limit in self.checks
                ):
                    yield match.span(2)


@cache
def _entropy_rule() -> EntropyRule:
    """Base64 and hex strings at detect-secrets' default limits (4.5 and 3.0 bits a character):
    random enough that an identifier, a word or a path never passes (on 2,500 files of
    well-known Python packages they flagged seven strings: hex alphabets, a base64 example, an
    id). They catch the keys that have neither a known shape nor a telling name, passed as an
    argument or listed under a name on another line."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    plugins = (Base64HighEntropyString(), HexHighEntropyString())
    alphabet = re.escape("".join(sorted(set().union(*(plugin.charset for plugin in plugins)))))
    quoted = rf"""([\'":=])\s*([{alphabet}]+)([\'"]|$)"""  # the plugins' own pattern, for any alphabet
    list_item = rf"^[ \t]*-[ \t]+([\"']?)([{alphabet}]+)\1[ \t]*$"
    return EntropyRule(
        patterns=(re.compile(quoted, re.MULTILINE), re.compile(list_item, re.MULTILINE)),
        checks=tuple(
            (frozenset(plugin.charset), plugin.calculate_shannon_entropy, plugin.entropy_limit)
            for plugin in plugins
        ),
    )


@cache
def _name_rules() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(`name = "quoted"`, `name = bare`, `name = random-looking`), the secret names being ours
    plus detect-secrets' keyword list."""
    from detect_secrets.plugins.keyword import DENYLIST

    known = "|".join(keyword.replace(".*", r"[\w.\-]*") for keyword in DENYLIST)
    name = rf"\b[\w.\-]*(?:{OUR_NAMES}|{known})[\w.\-]*"
    hinted = rf"\b[\w.\-]*(?:{HINTS})[\w.\-]*"
    return (
        re.compile(rf"""(?i)({name}["'\]]{{0,2}}\s*(?:=|:|=>|:=)\s*)(["'`])([^"'`\n]{{6,}})\2"""),
        re.compile(rf"""(?i)({name}\s*(?:=|:)\s*)([^\s"',;(){{}}\[\]]{{8,}})\s*$"""),
        re.compile(
            rf"""(?i)({hinted}["'\]]{{0,2}}\s*(?:==|=>|:=|=|:)\s*)(["'`]?)([^\s"'`,;]{{10,}})\2"""
            r"""(?=[\s"'`,;)\]}]|$)"""
        ),
    )


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value).values()
    size = len(value)
    return -sum(count / size * math.log2(count / size) for count in counts)


def looks_random(value: str) -> bool:
    """A long value mixing letters with digits or cases, with little repetition: a generated
    key or password rather than a word, a name, a path or a reference."""
    if len(value) < 10 or NOT_A_SECRET.match(value) or NOT_RANDOM.search(value):
        return False
    digits = any(c.isdigit() for c in value)
    upper = any(c.isupper() for c in value)
    lower = any(c.islower() for c in value)
    if not (upper or lower) or not (digits or (upper and lower)):
        return False
    return entropy(value) >= min(3.5, 0.8 * math.log2(len(value)))


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """The part of a detector's match that is the secret: its longest group of 8 characters or
    more when it has one (the others capture a prefix), else the match without delimiters."""
    best = (0, 0)
    for group in range(1, (match.re.groups or 0) + 1):
        start, end = match.span(group)
        if end - start >= 8 and end - start > best[1] - best[0]:
            best = (start, end)
    if best != (0, 0):
        return best
    start, end = match.span()
    text = match.string
    while start < end and text[start] in " \t\r\n=:\"'":
        start += 1
    while end > start and text[end - 1] in " \t\r\n=:\"'":
        end -= 1
    return start, end


def _cut(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with the (possibly overlapping) spans replaced by one placeholder each run."""
    parts: list[str] = []
    last = 0
    for start, end in sorted(spans):
        if end <= start:
            continue
        if start < last:  # overlaps the span just cut: extend it
            last = max(last, end)
            continue
        parts += [text[last:start], PLACEHOLDER]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _word_start(text: str, start: int) -> bool:
    """Whether a token starts a word (what the `\\b` left out of TOKENS said)."""
    return start == 0 or text[start] == "-" or not (text[start - 1].isalnum() or text[start - 1] == "_")


def _quoted(match: re.Match[str]) -> str:
    name, quote, value = match.groups()
    if NOT_A_SECRET.match(value) or "{" in value:
        return match.group(0)
    return f"{name}{quote}{PLACEHOLDER}{quote}"


def _bare(match: re.Match[str]) -> str:
    name, value = match.groups()
    if NOT_A_SECRET.match(value) or ("." in value and value.replace(".", "").replace("_", "").isalpha()):
        return match.group(0)  # `token: settings.token`, `key = module.attribute`
    return f"{name}{PLACEHOLDER}"


def _random(match: re.Match[str]) -> str:
    name, quote, value = match.groups()
    if value == PLACEHOLDER or not looks_random(value):
        return match.group(0)
    return f"{name}{quote}{PLACEHOLDER}{quote}"


def _netrc(match: re.Match[str]) -> str:
    keyword, value = match.groups()
    if value == PLACEHOLDER or (value.isalpha() and value.islower()):
        return match.group(0)  # `password hashing`: prose, not a .netrc entry
    return f"{keyword}{PLACEHOLDER}"


def _auth_scheme(match: re.Match[str]) -> str:
    scheme, value = match.groups()
    if value.islower() and value.isalpha():
        return match.group(0)  # `bearer authentication`: a word, not a credential
    if not any(c.isdigit() or c.isupper() for c in value) and not looks_random(value):
        return match.group(0)
    return f"{scheme}{PLACEHOLDER}"


def _assignment(line: str) -> str:
    quoted, bare, hinted = _name_rules()
    spans = [_secret_span(match) for pattern in _detector_patterns()[1] for match in pattern.finditer(line)]
    if spans:
        line = _cut(line, spans)
    line = NETRC_PASSWORD.sub(_netrc, line)
    line = quoted.sub(_quoted, line)
    line = bare.sub(_bare, line)
    return hinted.sub(_random, line)


def _assignments(text: str) -> str:
    """Apply the name rules to the lines that contain a name worth a look."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lowercase is longer: offsets would shift
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    parts: list[str] = []
    last = 0
    for hit in NAME_PARTS.finditer(lowered):
        if hit.start() < last:
            continue  # on a line already done
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.end())
        end = len(text) if end < 0 else end
        parts += [text[last:start], _assignment(text[start:end])]
        last = end
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def redact(text: str) -> str:
    """`text` with every secret-looking string replaced by [REDACTED]."""
    spans = [match.span() for match in TOKENS.finditer(text) if _word_start(text, match.start())]
    spans += [
        match.span()
        for pattern in SEPARATE_TOKENS
        for match in pattern.finditer(text)
        if _word_start(text, match.start())
    ]
    spans += [_secret_span(match) for pattern in _detector_patterns()[0] for match in pattern.finditer(text)]
    spans += [match.span(1) for pattern in CONTEXT_PATTERNS for match in pattern.finditer(text)]
    spans += list(_entropy_rule().spans(text))
    if spans:
        text = _cut(text, spans)
    text = URL_PASSWORD.sub(lambda m: f"{m.group(1)}{PLACEHOLDER}{m.group(3)}", text)
    text = AUTH_SCHEME.sub(_auth_scheme, text)
    return _assignments(text)


def redact_head(text: str, end: int) -> str:
    """The first `end` characters of `text`, redacted as if the text went on: a secret that the
    cut halves is recognised whole and goes, where its first half alone would not be recognised
    (too short for its pattern, or missing the quote that closes a value).

    What is returned is either the head redacted on its own, when that is the beginning of the
    text redacted further on, or the part the two agree on and a placeholder: in both cases a
    prefix of the longer redaction."""
    head = redact(text[:end])
    if end >= len(text):
        return head
    further = redact(text[: end + HEAD_SLACK])
    if further.startswith(head):
        return head
    pairs = enumerate(zip(head, further, strict=False))
    agreed = next((i for i, (a, b) in pairs if a != b), min(len(head), len(further)))
    return head[:agreed] + PLACEHOLDER
