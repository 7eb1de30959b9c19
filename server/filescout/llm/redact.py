"""Remove secret-looking strings from text before it leaves the machine.

Applied to every piece of workspace content placed in a model prompt (file excerpts, outlines,
summaries, paths) and to every text an answer gives a client (`engine/shown.py`: summaries, tags,
reasons). Sensitive files never get this far; this catches the key pasted into a config file or
a test fixture. Patterns favour catching too much: a redacted placeholder costs the model
little. A screen (`might_hold_secret`, below the rules) lets `redact` return at once the many
short texts that no rule could change.

Five layers:
- the token catalogue of `bc-detect-secrets` (Bridgecrew's maintained fork of Yelp's
  detect-secrets: AWS, Azure, Slack, Twilio, npm, JWT, private keys, ...), used as a library of
  regular expressions over the whole text, and our own patterns for tokens it does not know.
  Its detectors are kept as data (`detect_secrets_catalogue`, generated from the pinned release
  and checked against it by a test): the package itself imports requests, urllib3 and ssl, a
  tenth of a second that a command showing one redacted text would pay;
- its high-entropy strings (base64 and hex at its default limits), quoted, ending a `key: value`
  line, or listed as YAML items: the keys that have neither a known shape nor a telling name;
- secrets that their surroundings give away: passwords in URLs (`redis://:pw@host` too), in
  `curl -u`, .netrc and .pgpass lines, password hashes (crypt(3), Django's, LDAP's, a shadow
  file's), Azure SAS signatures, and `Authorization: Bearer/Basic/Token` credentials;
- assignments to a name that says secret (`password`, `db_pass`, `api_key`, `client_secret` and
  the keywords detect-secrets knows): the value goes, whatever it looks like;
- assignments to a name that hints at one (`SERVICE_CREDS`, `auth`, `private`, `client-key-data`,
  ...) in code, .env, .tfvars, .npmrc, YAML, JSON or TOML: the value goes when it is long and
  random-looking (Shannon entropy), so `auth: oauth2` stays readable.
The name rules only look at lines that contain one of the names, so redaction stays cheap.
`redact_head` redacts an excerpt as if the text went on, so a key the cut halves goes whole.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, partial

from filescout.llm import detect_secrets_catalogue as catalogue

log = logging.getLogger(__name__)

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
        # password hashes, which crack offline: crypt(3) (htpasswd, shadow files, bcrypt,
        # yescrypt, scrypt), passlib's and PHP's (phpass, Drupal), Django's, LDAP's; lower-cased
        # too, as in a tag
        r"\$(?:apr1|2[abxy]?|[13567]|y|gy|sha1|md5(?:,rounds=\d+)?|[PHSphs]|argon2(?:id|i|d)|scrypt|"
        r"pbkdf2(?:-sha(?:1|256|512))?|bcrypt(?:-sha256)?)\$[A-Za-z0-9./$=,+\-]{20,}",
        r"(?:pbkdf2_sha(?:1|256)|argon2|bcrypt(?:_sha256)?|scrypt|sha1|md5|crypt)\$[A-Za-z0-9./$=,+\-]{16,}",
        r"\{(?i:s?sha(?:\d{3})?|s?md5|crypt|pbkdf2(?:-sha\d+)?|argon2|bcrypt)\}[A-Za-z0-9+/=.$]{8,}",
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
        # (the password ends the line: a shadow line's fields go on)
        r":(?<=[\w.*\-]:)(?:\d{1,5}|\*):[\w.\-*]+:[\w.\-*]+:([^\s\"':]{4,})(?=[\s\"']|$)",
        # a shadow or passwd line's hash (DES-crypt has no `$` to know it by): `user:hash:19000:0:`
        r":(?<=[\w.\-]:)(!{0,2}[^\s:!*][^\s:]{12,})(?=:\d*:\d*:)",
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
# camelCase and PascalCase words (`compilerOptions`, `apiVersion`): names, not keys
IDENTIFIER = re.compile(r"[A-Za-z][a-z]+(?:[A-Z][a-z]{2,})+")


@cache
def _detector_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    """The regular expressions of detect-secrets' token detectors: (those for any text, those
    for `keyword = value` lines). Compiled on first use, from the catalogue: only a text that
    the screen holds back needs them."""
    anywhere: list[re.Pattern[str]] = []
    assignments: list[re.Pattern[str]] = []
    for detector, denylist in catalogue.REGEX_DETECTORS:
        if detector not in SKIPPED_DETECTORS:
            for source, flags in denylist:
                pattern = re.compile(source, flags)
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
    plugins = catalogue.HIGH_ENTROPY  # (name, charset, limit): base64's, hex's
    alphabet = re.escape("".join(sorted(set().union(*(charset for _, charset, _ in plugins)))))
    quoted = rf"""([\'":=])\s*([{alphabet}]+)([\'"]|$)"""  # the plugins' own pattern, for any alphabet
    list_item = rf"^[ \t]*-[ \t]+([\"']?)([{alphabet}]+)\1[ \t]*$"
    return EntropyRule(
        patterns=(re.compile(quoted, re.MULTILINE), re.compile(list_item, re.MULTILINE)),
        checks=tuple(
            (frozenset(charset), partial(plugin_entropy, plugin, charset), limit)
            for plugin, charset, limit in plugins
        ),
    )


NUMBERS_DISCOUNTED = frozenset({"HexHighEntropyString"})
"""High-entropy plugins that rate a string of decimal digits less random than its characters say
(detect-secrets' hex plugin: numbers were most of what it flagged wrongly), the more so the
shorter it is."""


def plugin_entropy(plugin: str, charset: str, data: str) -> float:
    """The entropy detect-secrets' high-entropy plugin `plugin` gives `data` (its
    `calculate_shannon_entropy`), for a `data` of `charset`'s characters only."""
    entropy = charset_entropy(data, charset)
    if plugin in NUMBERS_DISCOUNTED and len(data) > 1:
        try:
            int(data)
        except ValueError:
            return entropy
        entropy -= 1.2 / math.log(len(data), 2)
    return entropy


def charset_entropy(data: str, charset: str) -> float:
    """Shannon entropy in bits per character, as detect-secrets computes it for its high-entropy
    plugins (the module's `calculate_shannon_entropy`): the same sum in the same order, so the
    same float at the limit. Like it, 0.0 for fewer than 8 characters or fewer than 4 distinct
    ones of the charset, which could not pass either limit anyway (log2(7) < 3.0)."""
    if len(data) < 8 or len(set(data) & set(charset)) < 4:
        return 0.0
    total = 0.0
    for character in charset:
        share = float(data.count(character)) / len(data)
        if share > 0:
            total += -share * math.log(share, 2)
    return total


@cache
def _name_rules() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(`name = "quoted"`, `name = bare`, `name = random-looking`), the secret names being ours
    plus detect-secrets' keyword list."""
    known = "|".join(keyword.replace(".*", r"[\w.\-]*") for keyword in catalogue.KEYWORDS)
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
    if (
        len(value) < 10
        or NOT_A_SECRET.match(value)
        or NOT_RANDOM.search(value)
        or IDENTIFIER.fullmatch(value)
    ):
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
    return apply_rules(text) if might_hold_secret(text) else text


def apply_rules(text: str) -> str:
    """Every rule over `text`: what `redact` does with a text the screen holds back."""
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


# -- The screen ---------------------------------------------------------------------------------
# What a client is shown is redacted too: summaries, tags and reasons, a few hundred thousand
# short texts for a listing of 100K files, where the rules cost ~70 µs a summary. Every rule needs
# something that ordinary text seldom holds: a character or a prefix (`$`, `-----BEGIN`, `ghp_`),
# a separator after a name that says or hints secret, a word such as `bearer`. The screen looks
# for those things alone, in one pass; a text it finds none of them in is one that no rule could
# change, and `redact` returns it as it is. Each part names the rules it stands for, and a rule
# added above needs its part here too; tests/unit/test_redaction.py checks the screen against
# the rules on the planted corpus, on random texts and on these sources, and that it knows the
# installed detect-secrets.

SCREENED_DETECT_SECRETS = "1.5.52"
"""The detect-secrets release whose detectors the screen was derived from. With a catalogue of
another one the screen stands aside (every text gets every rule) until it is checked against the
new one."""

HEX_ALPHABET = "0123456789abcdefABCDEF"
BASE64_ALPHABET = "+-/0123456789=ABCDEFGHIJKLMNOPQRSTUVWXYZ\\_abcdefghijklmnopqrstuvwxyz"
"""detect-secrets' alphabets for high-entropy strings. A value passes a limit of 3.0 bits a
character (hex) with 9 different characters or more, 4.5 bits (base64) with 23 or more."""
CASE_FOLDS = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
"""The characters a case-insensitive pattern takes for an ASCII letter (`(?i)s` matches the long
s, U+017F): a text lowered with these folded shows every name such a pattern finds in it."""
_FOLDS = str.maketrans(CASE_FOLDS)
_FOLDED = "\u0130\u0131\u017f\u212a"

_RANDOM_RUN = r"(?:[0-9a-fA-F]{9}|[A-Za-z0-9+/=_\\\-]{23})"
# What follows `:` or `=` (or `=>`, `:=`, `==`): a high-entropy string, which goes whatever its
# name (no group), or what a name rule takes for a value, which goes if the name before says
# secret (the group `name`): quoted (`_quoted`), a word to the end of its line (`_bare`), a word
# of 10 or more holding a digit or a capital, as anything random does (`_random`), a run of 24
# (detect-secrets' `keyword = value` detectors). Each but a quote is a run of 8 or more.
_AFTER_SEPARATOR = (
    r"(?=[=>]?\s*(?:(?=[^\s\"',;]{8})%s|(?:[\"'`]|(?=[^\s\"',;]{8})(?:[^\s\"',;(){}\[\]]{8,}\s*$"
    r"|(?=[^\s\"'`,;]{10})[^\s\"'`,;]*?[^\s\"'`,;a-z_.\-/:@#%%&*!~?^|<>$+=]|[\w\-]{24}))(?P<%s>)))"
)
# A credential after an authorization scheme (`AUTH_SCHEME`), in any case.
_SCHEME_VALUE = rf"\s+[A-Za-z0-9._~+/=\-{_FOLDED}]{{12}}"
# detect-secrets' `keyword value` detectors, whose separator may be spaces alone.
_SPACED_VALUE = r"[\"']?\]? +[\"']?[\w\-]{24}"
_NETRC = r"(?:[oO][rR])?[dD]\s"  # `password secret`, `passwd secret` (.netrc)
# detect-secrets' `aws ... key ... <40 characters>`, in any case: the run starts within 48.
_AWS = rf"[sS\u017f].{{0,48}}?[0-9a-zA-Z/+{_FOLDED}]{{40}}"


def _anchored(alternatives: dict[str, str]) -> str:
    """One alternative per first character: the regex engine skips ahead to the few places where
    one could start (a literal first character each, nothing else)."""
    return "|".join(f"{re.escape(first)}(?:{rest})" for first, rest in alternatives.items())


SCREEN = re.compile(
    _anchored(
        {
            "$": r"[A-Za-z0-9./$=,+\-]{16}",  # password hashes: crypt(3), passlib, phpass, Django
            "{": r"\w[\w\-]*\}[A-Za-z0-9+/=.$]{8}",  # LDAP's password hashes
            # OpenAI, Anthropic, GitLab, Slack, PyPI, Mailgun, Square, PuTTY, Mailchimp, curl -u
            "-": r"(?<=sk-)[A-Za-z0-9_\-]{20}|(?<=gl[a-z]{2}-)|(?<=gl[a-z]{3}-)|(?<=gl[a-z]{4}-)"
            r"|(?<=[xX][oO][xX].-)|(?<=pypi-)|(?<=key-)[0-9a-f]{32}|(?<=sq0csp-)|(?<=PuTTY-)"
            r"|us[0-9]|(?<=\s-)(?:u|-user)"
            rf"|[ \t]+[\"']?{_RANDOM_RUN}",  # high-entropy strings listed as YAML items
            # npm, and what takes 16 or more after it: GitHub, DigitalOcean, Stripe, Hugging Face, Shopify
            "_": r"authToken|(?=[A-Za-z0-9_\-]{16})(?:pat_(?<=github_pat_)|v1_(?<=dop_v1_)|live_(?<=k_live_)"
            r"|test_(?<=k_test_)|(?<=gh[pousr]_)|(?<=npm_)|(?<=hf_)|(?<=whsec_)|(?<=shp[a-z][a-z]_))",
            "N": r"PM",  # NPM_TOKEN
            "J": r"(?<=eyJ)[A-Za-z0-9_=\-]+\.",  # JWTs
            "B": rf"EGIN|(?i:earer|asic){_SCHEME_VALUE}",  # private keys; Bearer, Basic
            "b": rf"(?i:earer|asic){_SCHEME_VALUE}",
            "g": rf"(?<=[dD][iI\u0130\u0131]g)(?i:est){_SCHEME_VALUE}",  # digest
            "G": rf"(?<=[dD][iI\u0130\u0131]G)(?i:est){_SCHEME_VALUE}",
            # token (a scheme, or a keyword); key
            **{
                k: rf"(?<=[tT][oO]{k})(?i:en)(?:{_SCHEME_VALUE}|{_SPACED_VALUE})|(?i:ey){_SPACED_VALUE}"
                for k in ("k", "K", "\u212a")
            },
            **{p: rf"(?i:wd?|ass(?:word)?){_SPACED_VALUE}" for p in ("p", "P")},  # pw, pwd, pass, password
            # AWS key ids, Artifactory, Twilio's AC..., Google API keys; Twilio's SK...
            "A": r"[A-Z0-9]{19}|KC[a-zA-Z0-9]{10}|P[\dA-F][a-zA-Z0-9]{8}|C[a-z0-9]{32}|Iza",
            "S": r"K[a-z0-9]{32}",
            # Google OAuth, SendGrid, Vault, Discord bots (24 characters or more before the dot)
            ".": r"(?=[\w\-]{6})(?:(?<=ya29\.)|(?<=SG\.)|(?<=hv[sbr]\.)|(?=[\w\-]{6}\.)(?<=[\w\-]{23}\.))",
            # passwords in URLs, Telegram bots, .pgpass lines (`host:port:database:user:password`)
            ":": r"//|AA|(?:\d{1,5}|\*):[\w.\-*]+:[\w.\-*]+:[^\s\"':]{4}"
            r"|(?<=[\w.\-]:)(?=!{0,2}[^\s:!*][^\s:]{12,}:\d*:\d*:)"  # shadow and passwd lines
            r"|" + _AFTER_SEPARATOR % (_RANDOM_RUN, "colon"),
            "=": r"=|(?<=[?&]sig=)|" + _AFTER_SEPARATOR % (_RANDOM_RUN, "equals"),  # Azure's keys and SAS
            "'": rf"\s*{_RANDOM_RUN}",
            '"': rf"\s*{_RANDOM_RUN}",
            # .netrc's `password secret`; aws
            "w": rf"(?<=[pP][aA][sS\u017f][sS\u017f]w){_NETRC}(?P<netrc>)|(?<=[aA]w){_AWS}",
            "W": rf"(?<=[pP][aA][sS\u017f][sS\u017f]W){_NETRC}(?P<NETRC>)|(?<=[aA]W){_AWS}",
        }
    ),
    re.MULTILINE,
)
_VALUE_RUN = re.compile(r"[^\s\"'`,;]*")  # what the name rules take for a value
_BARE_VALUE = re.compile(r"[^\s\"',;(){}\[\]]{8,}\s*")
# Before a separator, read backwards: spaces, up to two quotes or brackets, the name.
_NAME_BEFORE = re.compile(r"\s*[\"'\]]{0,2}([\w.\-]*)")
NAME_WINDOW = 256
"""How far back a name is read; a longer run is taken for a name."""


def might_hold_secret(text: str) -> bool:
    """Whether any rule could find a secret in `text`; if not, `redact` returns it unchanged."""
    if not _screen_applies():
        return True
    for match in SCREEN.finditer(text):
        found = match.lastgroup
        if found is None:
            return True
        start, end = _line(text, match.start())
        if found in ("netrc", "NETRC"):
            line = text[start:end]
            if NETRC_PASSWORD.sub(_netrc, line) != line:
                return True
        elif _after_a_name(text, start, match.start()) and _a_value_after(text[match.start() + 1 : end]):
            return True
    return False


def _line(text: str, at: int) -> tuple[int, int]:
    """Where the line holding `at` starts and ends: the name rules work a line at a time."""
    end = text.find("\n", at)
    return text.rfind("\n", 0, at) + 1, len(text) if end < 0 else end


def _after_a_name(text: str, line_start: int, separator: int) -> bool:
    """Whether the name before a separator holds a part of a secret's name, in any case."""
    start = max(line_start, separator - NAME_WINDOW)
    before = text[start:separator][::-1]
    match = _NAME_BEFORE.match(before)
    if match is None:
        return False
    if match.end() == len(before) and start > line_start:
        return True  # the window cut the name: it may hold anything
    name = match.group(1)[::-1]
    folded = name.lower() if name.isascii() else name.translate(_FOLDS).lower()
    return NAME_PARTS.search(folded) is not None


def _a_value_after(rest: str) -> bool:
    """Whether what follows a separator (to the end of its line) is a value a name rule takes."""
    for value in (rest, rest[1:]) if rest[:1] in ("=", ">") else (rest,):
        value = value.lstrip()
        if value[:1] in ("'", '"', "`"):
            return True
        run = _VALUE_RUN.match(value)
        word = run.group() if run else ""
        if len(word) >= 24 or (len(word) >= 10 and looks_random(word)) or _BARE_VALUE.fullmatch(value):
            return True
    return False


@cache
def _screen_applies() -> bool:
    """Whether the rules' detectors (the catalogue's release) are the ones the screen knows."""
    if catalogue.RELEASE != SCREENED_DETECT_SECRETS:
        log.warning(
            "the detect-secrets catalogue (%s) is not the release redaction's screen was checked "
            "against (%s): every text gets every rule, which is slower",
            catalogue.RELEASE,
            SCREENED_DETECT_SECRETS,
        )
        return False
    return True


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
