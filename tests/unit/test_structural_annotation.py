"""The structural annotator in process: every supported language's fixture summarised by what it
defines, licence headers left out, and secrets redacted before anything leaves the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from filescout.annotate.base import FileToAnnotate
from filescout.annotate.structural import annotate_structure
from filescout.llm.redact import redact
from filescout.scan.classify import classify

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "languages"

# fixture -> words its summary must contain (its main symbols, or its headings and keys)
EXPECTED = {
    "rate_limiter.py": ["Token-bucket rate limiting", "TokenBucket", "RateLimiter", "throttled_get", "httpx"],
    "sessionStore.js": ["Session storage backed by Redis", "SessionStore", "createSessionStore"],
    "invoiceService.ts": ["Invoice service", "InvoiceService", "InvoiceStatus", "dueDate"],
    "UserAvatar.tsx": ["Avatar component", "UserAvatar", "initials", "react"],
    "ledger.go": ["double-entry bookkeeping", "Transaction", "NewTransaction"],
    "config_loader.rs": ["layered configuration", "AppConfig", "Loader", "merge_layers"],
    "OrderRepository.java": ["customer orders", "OrderRepository", "OrderEvents"],
    "ring_buffer.c": ["ring buffer", "ring_buffer_create", "ring_buffer_push"],
    "mesh_renderer.cpp": ["Mesh renderer", "MeshRenderer", "clamp_value"],
    "PaymentController.cs": ["payments", "PaymentController", "IPaymentGateway"],
    "markdown_renderer.rb": ["Renders Markdown", "MarkdownRenderer"],
    "CartController.php": ["Shopping cart", "CartController", "cart_total"],
    "NotificationScheduler.kt": ["quiet hours", "NotificationScheduler", "QuietHours", "isQuiet"],
    "ImageCache.swift": ["cache for downloaded images", "ImageCache", "ImageLoading", "cacheKey"],
    "inventory.lua": ["Inventory management", "Inventory.new", "stack_size"],
    "deploy.sh": ["deploys it to the staging servers", "build_bundle", "upload_bundle"],
    "CONTRIBUTING.md": ["Contributing to Shop", "Development setup", "Running the tests"],
    "package.json": ["shop-frontend", "Storefront", "scripts", "dependencies"],
    "docker-compose.yaml": ["services", "volumes"],
    "pyproject.toml": ["shop-backend", "project", "tool"],
    "Checkout.scala": ["Checkout flow", "CheckoutValidator"],
    "NOTES.txt": ["Migration plan for the billing database"],
}


def structural(name: str):
    text = (FIXTURES / name).read_text()
    kind = classify(name, text.encode()[:8192])
    return annotate_structure(
        FileToAnnotate(path=name, hash="h", language=kind.language, kind=kind.kind, text=text)
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_structural_summary_names_what_the_file_defines(name: str) -> None:
    annotation = structural(name)
    assert len(annotation.summary) <= 300
    for word in EXPECTED[name]:
        assert word in annotation.summary, f"{name}: {word!r} missing from {annotation.summary!r}"
    assert 1 <= len(annotation.tags) <= 8
    assert all(tag == tag.lower() for tag in annotation.tags)


def test_every_fixture_is_covered() -> None:
    assert sorted(path.name for path in FIXTURES.iterdir()) == sorted(EXPECTED)


def test_structural_symbols_tags_and_imports() -> None:
    python = structural("rate_limiter.py")
    assert {"TokenBucket", "RateLimiter", "throttled_get", "take", "allow"} <= set(python.symbols)
    assert "httpx" in python.imports and "__future__" not in python.imports
    assert "cli" in python.tags  # `if __name__ == "__main__"`
    assert "http" in python.tags  # httpx is an HTTP client
    go = structural("ledger.go")
    assert "github.com/shopspring/decimal" in go.imports
    assert "Balanced" in go.symbols  # methods are symbols too
    ts = structural("UserAvatar.tsx")
    assert "react" in ts.tags


def test_licence_headers_are_not_summaries() -> None:
    assert "Copyright" not in structural("ring_buffer.c").summary


def test_redaction_catches_common_secrets() -> None:
    text = (
        "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456\n"
        'db = "postgres://app:hunter2hunter2@db/app"\npassword = "correct horse battery"\n'
        'aws_key = "AKIAIOSFODNN7EXAMPLE"\n-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----\n'
        "token = settings.token\n"
    )
    cleaned = redact(text)
    for secret in ["sk-proj-abc", "hunter2hunter2", "correct horse", "AKIAIOSFODNN7EXAMPLE", "MIIEv"]:
        assert secret not in cleaned
    assert "token = settings.token" in cleaned  # a reference, not a secret
    assert "postgres://app:[REDACTED]@db/app" in cleaned


def test_a_data_file_defines_nothing_whatever_its_rows_look_like() -> None:
    rows = "".join(
        f"class Row{number},def,{number}\nfunction total{number}() {{,x\n" for number in range(2000)
    )
    kind = classify("table.csv", rows.encode()[:8192])
    assert kind.kind == "data"
    annotation = annotate_structure(
        FileToAnnotate(path="table.csv", hash="h", language=kind.language, kind=kind.kind, text=rows)
    )
    assert annotation.symbols == [] and "Defines" not in annotation.summary
    assert "Csv data file" in annotation.summary
