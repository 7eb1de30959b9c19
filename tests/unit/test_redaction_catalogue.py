"""Redaction's catalogue of detect-secrets' detectors (llm/detect_secrets_catalogue.py) is what
the installed release yields: each detector's regular expressions (text and flags, in order),
the keyword list, the high-entropy plugins' alphabets and limits, and the entropy each plugin
gives a string. A release that changes any of them fails here until the catalogue is made again
(bench/make_detect_secrets_catalogue.py) and the screen is checked against it."""

from __future__ import annotations

import importlib.metadata
import random
import string
import subprocess
import sys

from filescout.llm import detect_secrets_catalogue as catalogue
from filescout.llm import redact


def test_the_catalogue_is_the_installed_release() -> None:
    assert importlib.metadata.version("bc-detect-secrets") == catalogue.RELEASE


def test_every_regex_detector_is_in_the_catalogue_with_the_same_patterns() -> None:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    live = tuple(
        (detector.__name__, tuple((pattern.pattern, pattern.flags) for pattern in detector().denylist))
        for detector in get_mapping_from_secret_type_to_class().values()
        if issubclass(detector, RegexBasedDetector)
    )
    assert live == catalogue.REGEX_DETECTORS


def test_the_compiled_patterns_are_the_detectors_own() -> None:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    live = [
        pattern
        for detector in get_mapping_from_secret_type_to_class().values()
        if issubclass(detector, RegexBasedDetector) and detector.__name__ not in redact.SKIPPED_DETECTORS
        for pattern in detector().denylist
    ]
    anywhere, assignments = redact._detector_patterns()
    assert sorted((p.pattern, p.flags) for p in (*anywhere, *assignments)) == sorted(
        (p.pattern, p.flags) for p in live
    )
    assert {p.pattern for p in assignments} == {
        p.pattern for p in live if p.pattern.startswith(redact.ASSIGNMENT_DETECTOR)
    }
    assert assignments  # the `keyword = value` detectors are told apart


def test_the_keywords_are_the_keyword_detectors() -> None:
    from detect_secrets.plugins.keyword import DENYLIST

    assert tuple(DENYLIST) == catalogue.KEYWORDS


def test_the_high_entropy_plugins_are_the_installed_ones() -> None:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin

    live = tuple(
        (plugin.__class__.__name__, plugin.charset, plugin.entropy_limit)
        for plugin in (
            detector()
            for detector in get_mapping_from_secret_type_to_class().values()
            if issubclass(detector, HighEntropyStringsPlugin)
        )
    )
    assert live == catalogue.HIGH_ENTROPY


def strings_of(charset: str, rng: random.Random, count: int) -> list[str]:
    """Strings a high-entropy check is given (only characters of its charset): random ones of
    every length, drawn from all or part of the charset, numbers, repeats."""
    texts = ["0", "00", "0123456789", "1" * 40, charset, charset[::-1] * 3]
    for _ in range(count):
        pool = rng.choice([charset, string.digits, charset[: rng.randint(1, len(charset))], charset[-5:]])
        texts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 90))))
    return texts


def test_each_plugin_gives_a_string_the_entropy_detect_secrets_gives_it() -> None:
    """Bit for bit: a string at the limit passes or fails as it does with detect-secrets."""
    from detect_secrets.plugins import high_entropy_strings

    rng = random.Random(11)
    for name, charset, _ in catalogue.HIGH_ENTROPY:
        plugin = getattr(high_entropy_strings, name)()
        for text in strings_of(charset, rng, 20_000):
            assert redact.plugin_entropy(name, charset, text) == plugin.calculate_shannon_entropy(text), (
                name,
                text,
            )


def test_redaction_imports_no_detect_secrets() -> None:
    """The catalogue stands in for the package: a fresh interpreter redacts with every rule and
    never loads it (a tenth of a second of requests, urllib3 and ssl)."""
    code = (
        "import sys\n"
        "from filescout.llm.redact import redact\n"
        "assert '[REDACTED]' in redact('key = \"Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE\"\\n')\n"
        "assert '[REDACTED]' in redact('id: \"8f3a9c0b7d1e6f2a4b5c9d0e1f7a3b6c\"')\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('detect_secrets', 'requests')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
