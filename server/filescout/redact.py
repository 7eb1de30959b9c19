"""Remove secret-looking strings from text before it leaves the machine.

Applied to every piece of workspace content placed in a model prompt (file excerpts, outlines,
summaries). Sensitive files never get this far; this catches the key pasted into a config file or
a test fixture. Patterns favour catching too much: a redacted placeholder costs the model little.
"""

from __future__ import annotations

import re

PLACEHOLDER = "[REDACTED]"

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
        r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
        r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
        r"\bya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth
        r"\bnpm_[A-Za-z0-9]{36}\b",  # npm
        r"\bpypi-[A-Za-z0-9_\-]{50,}",  # PyPI
        r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
        r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",  # JWTs
    )
)

# A password in a URL: keep scheme, user and host, drop the password.
URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]+:)([^@\s/]+)(@)")

# `api_key = "..."`, `PASSWORD: ...`, `"clientSecret": "..."`: keep the name, drop the value.
SECRET_NAME = (
    r"""\b[\w.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|"""
    r"""private[_\-]?key|client[_\-]?secret|auth[_\-]?token|credential|signing[_\-]?key)[\w.\-]*"""
)
QUOTED_SECRET = re.compile(rf"""(?i)({SECRET_NAME}["']?\s*(?:=|:|=>)\s*)(["'])([^"'\n]{{6,}})\2""")
BARE_SECRET = re.compile(
    rf"""(?i)({SECRET_NAME}\s*(?:=|:)\s*)([^\s"',;(){{}}\[\]]{{8,}})\s*$""", re.MULTILINE
)
# Values that are plainly not secrets (references, placeholders).
NOT_A_SECRET = re.compile(
    r"^(?:\$\{?|%\(|\{\{|<|os\.|process\.env|env\(|getenv|None$|null$|true$|"
    r"false$|self\.|this\.|settings\.|config\.|\*+$|x+$|changeme$|your[_\-])",
    re.IGNORECASE,
)


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


def redact(text: str) -> str:
    """`text` with every secret-looking string replaced by [REDACTED]."""
    for pattern in TOKEN_PATTERNS:
        text = pattern.sub(PLACEHOLDER, text)
    text = URL_PASSWORD.sub(lambda m: f"{m.group(1)}{PLACEHOLDER}{m.group(3)}", text)
    text = QUOTED_SECRET.sub(_quoted, text)
    return BARE_SECRET.sub(_bare, text)
