"""Model faults benchmark: findRelevant (model on) and annotation over the LSP face while the model
endpoint fails in each way it can, against the local fake OpenAI-compatible server.

    python bench/model_faults_bench.py [--files 300] [--requests 20] [--timeout 2] [--only NAME ...]

A synthetic workspace (bench/make_workspace.py) is indexed and annotated by the healthy fake
first. Then, for each fault in turn (the fault applies to every model call, relevance and
annotation alike):
- `--requests` findRelevant requests, one after another, each guarded by a generous client-side
  timeout: how many failed (an error, or no answer: goal 0), how many came back degraded, their
  time (p50/p95/max, against the healthy run), and the model calls they made (retries bounded);
- annotation: `--touched` files get new content while the fault lasts; once the model has failed
  on them, how many show their structural annotation and how many have none (lost: goal 0); then
  the endpoint recovers, and the time until all of them show the model's annotation (answers that
  were malformed are not asked for again in the same session, by design: those files stay
  structural until a restart).
The server runs with `timeout` = --timeout s, `maxRetries` 4 and `failurePause` 5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.fake_openai import Action, FakeOpenAI
from harness.stats import percentile
from harness.wire import WireClient, wait_until_idle
from harness.workspaces import generate, queries

RELEVANCE_KINDS = ("tags", "judge", "final")
FAILURE_PAUSE = 5.0


@dataclass
class Fault:
    name: str
    apply: Callable[[FakeOpenAI], None]
    malformed_answers: bool = False
    """The endpoint works but the model's answers are unusable: files are given up on."""


def action(value: Action) -> Callable[[FakeOpenAI], None]:
    def apply(fake: FakeOpenAI) -> None:
        fake.default = value

    return apply


def edit(change: Callable[[str, Any], Any]) -> Callable[[FakeOpenAI], None]:
    def apply(fake: FakeOpenAI) -> None:
        fake.edit = change

    return apply


def invented(kind: str, answer: Any) -> Any:
    if isinstance(answer, dict) and isinstance(answer.get("files"), list):
        for entry in answer["files"]:
            entry["path"] = f"ghost/{entry['path']}"
    return answer


def faults(timeout: float) -> list[Fault]:
    return [
        Fault("healthy", lambda fake: None),
        Fault("hung connection", action(Action(fault="hang"))),
        Fault("answer dripping a byte per 0.2 s", action(Action(fault="drip"))),
        Fault(f"slow answer ({1.5 * timeout:g} s)", action(Action(delay=1.5 * timeout))),
        Fault("connection closed before answering", action(Action(fault="drop"))),
        Fault("connection closed mid-answer", action(Action(fault="truncate"))),
        Fault("malformed JSON body", action(Action(body='{"choices": [{"message": {"content": "x'))),
        Fault("200 that is not a completion", action(Action(body='{"choices": [{}]}'))),
        Fault("500 storm", action(Action(status=500))),
        Fault("429 storm, Retry-After 1 s", action(Action(status=429, headers={"Retry-After": "1"}))),
        Fault("429 storm, Retry-After 120 s", action(Action(status=429, headers={"Retry-After": "120"}))),
        Fault("429 storm, no Retry-After", action(Action(status=429))),
        Fault("answers that are not JSON", edit(lambda kind, answer: "Sure! Here you go."), True),
        Fault("answers naming files not offered", edit(invented), True),
    ]


def heal(fake: FakeOpenAI) -> None:
    fake.default = None
    fake.per_kind.clear()
    fake.script.clear()
    fake.edit = lambda kind, answer: answer


# -- the server ---------------------------------------------------------------------------------


async def model_status(client: WireClient) -> dict[str, Any]:
    return (await client.command("filescout.status"))["model"]


# -- one fault ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    latencies: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    degraded: int = 0
    messages: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    annotation: dict[str, int] = field(default_factory=dict)
    annotation_message: str = ""
    recovery: float | None = None
    recovered: int = 0


async def until_healthy(client: WireClient, fake: FakeOpenAI, text: str, limit: float = 120.0) -> None:
    """Wait out an open circuit: until a model-on request runs every stage again."""
    heal(fake)
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        result = await client.result("files/findRelevant", {"query": text, "limit": 10})
        if result["stages"][-1] == "final" and not result["degraded"]:
            return
        await asyncio.sleep(0.5)
    raise TimeoutError("the model endpoint did not become usable again")


async def relevance_under(
    client: WireClient, fake: FakeOpenAI, fault: Fault, texts: list[str], guard: float, outcome: Outcome
) -> None:
    before = len(fake.requests)
    fault.apply(fake)
    for text in texts:
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(
                client.result("files/findRelevant", {"query": text, "limit": 10}), guard
            )
        except asyncio.TimeoutError:
            outcome.failed.append(f"no answer within {guard:.0f} s")
            continue
        except Exception as error:  # an error answer: what this benchmark counts as a failure
            outcome.failed.append(f"{type(error).__name__}: {error}")
            continue
        finally:
            outcome.latencies.append(time.perf_counter() - started)
        if result["degraded"]:
            outcome.degraded += 1
            outcome.messages[(result["message"] or "")[:140]] += 1
    outcome.calls.update(r.kind for r in fake.requests[before:] if r.kind in RELEVANCE_KINDS)


async def annotation_under(
    client: WireClient,
    fake: FakeOpenAI,
    fault: Fault,
    root: Path,
    touched: list[str],
    round_: int,
    outcome: Outcome,
) -> None:
    for relative in touched:
        with (root / relative).open("a", encoding="utf-8") as file:
            file.write(
                f"\n// fault round {round_}\n"
                if not relative.endswith(".py")
                else f"\n# fault round {round_}\n"
            )
    fault.apply(fake)
    before = fake.calls("annotate")
    await client.command("filescout.reindex")
    started = time.perf_counter()
    while time.perf_counter() - started < 90:
        status = await model_status(client)
        failed = status["message"] is not None and fake.calls("annotate") > before
        settled = status["state"] == "idle" and status["queuedFiles"] == 0
        if failed or settled:
            break
        await asyncio.sleep(0.2)
    outcome.annotation_message = (status["message"] or "")[:140]
    outcome.annotation = await annotation_counts(client, touched)
    heal(fake)
    started = time.perf_counter()
    while time.perf_counter() - started < 200:  # a Retry-After of 120 s is waited out
        counts = await annotation_counts(client, touched)
        if counts.get("model", 0) == len(touched):
            outcome.recovery = time.perf_counter() - started
            break
        status = await model_status(client)
        if status["state"] == "idle" and status["queuedFiles"] == 0 and fault.malformed_answers:
            break  # given up on for this session: they keep their structural annotation
        await asyncio.sleep(0.2)
    outcome.recovered = (await annotation_counts(client, touched)).get("model", 0)


async def annotation_counts(client: WireClient, paths: list[str]) -> dict[str, int]:
    page = await client.result("files/getFiles", {"paths": paths, "limit": len(paths)})
    counts: Counter[str] = Counter()
    for item in page["items"]:
        if not item["summary"] or item["status"] == "pending":
            counts["lost"] += 1
        elif (item["annotator"] or "").startswith("model:"):
            counts["model"] += 1
        else:
            counts["structural"] += 1
    counts["missing"] = len(paths) - len(page["items"])
    return dict(counts)


# -- the run ------------------------------------------------------------------------------------


async def main_async(args: argparse.Namespace) -> list[Outcome]:
    work = Path(tempfile.mkdtemp(prefix="filescout-faults-"))
    root = work / "ws"
    generate(root, args.files, seed=7)
    fake = FakeOpenAI().start()
    options = {
        "model": {
            "model": "bench-model",
            "baseUrl": fake.base_url,
            "timeout": args.timeout,
            "maxRetries": 4,
            "failurePause": FAILURE_PAUSE,
        }
    }
    log = work / "server.log"
    client = await WireClient.start(
        root, work / "cache", watch=False, initialization_options=options, stderr=log
    )
    outcomes: list[Outcome] = []
    try:
        annotated = await wait_until_idle(client, 600)
        print(f"indexed and annotated {args.files} files in {annotated:.1f} s", file=sys.stderr)
        page = await client.result("files/getFiles", {"limit": 5000, "kinds": ["source"]})
        touched = sorted(item["path"] for item in page["items"] if item["size"] < 20_000)[: args.touched]
        texts = queries(args.requests, seed=23)
        guard = 10 * args.timeout + 60
        chosen = [fault for fault in faults(args.timeout) if not args.only or fault.name in args.only]
        for round_, fault in enumerate(chosen, start=1):
            await until_healthy(client, fake, texts[0])
            outcome = Outcome(fault.name)
            await relevance_under(client, fake, fault, texts, guard, outcome)
            await until_healthy(client, fake, texts[0])
            await annotation_under(client, fake, fault, root, touched, round_, outcome)
            outcomes.append(outcome)
            print(summary_line(outcome, len(texts), len(touched)), file=sys.stderr, flush=True)
    finally:
        heal(fake)
        await client.stop()
        fake.stop()
    tracebacks = log.read_text(errors="replace").count("Traceback")
    if tracebacks or args.keep:
        print(f"server log: {tracebacks} tracebacks in {log}", file=sys.stderr)
    else:
        print("server log: no tracebacks", file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    return outcomes


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def summary_line(outcome: Outcome, requests: int, touched: int) -> str:
    lat = outcome.latencies or [float("nan")]
    calls = sum(outcome.calls.values())
    recovered = (
        f"{outcome.recovery:.1f} s"
        if outcome.recovery is not None
        else f"{outcome.recovered}/{touched} model"
    )
    return (
        f"| {outcome.name} | {len(outcome.failed)}/{requests} | {outcome.degraded} | "
        f"{ms(statistics.median(lat))} | {ms(percentile(lat, 0.95))} | {ms(max(lat))} | "
        f"{calls / max(requests, 1):.2f} ({calls}) | "
        f"{outcome.annotation.get('structural', 0)}/{outcome.annotation.get('model', 0)}/"
        f"{outcome.annotation.get('lost', 0) + outcome.annotation.get('missing', 0)} | {recovered} |"
    )


def report(outcomes: list[Outcome], args: argparse.Namespace) -> str:
    load = os.getloadavg()
    lines = [
        f"model faults benchmark, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{platform.machine()}, {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        f"{args.files} files, {args.requests} findRelevant requests per fault (model on, limit 10), "
        f"timeout {args.timeout:g} s, maxRetries 4, failurePause {FAILURE_PAUSE:g} s, {args.touched} files re-annotated",
        "",
        "| fault | failed requests | degraded | p50 ms | p95 ms | max ms | model calls per request (all) "
        "| annotation: structural/model/lost | back to the model |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [summary_line(outcome, args.requests, args.touched) for outcome in outcomes]
    lines.append("")
    for outcome in outcomes:
        for message, count in outcome.messages.most_common(2):
            lines.append(f"- {outcome.name}: {count}× “{message}”")
        if outcome.annotation_message:
            lines.append(f"- {outcome.name}, annotation: “{outcome.annotation_message}”")
        for failure in outcome.failed[:3]:
            lines.append(f"- {outcome.name}: FAILED {failure}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--touched", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--only", nargs="*", help="names of the faults to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the raw outcomes here")
    parser.add_argument("--keep", action="store_true", help="keep the workspace and the server's log")
    args = parser.parse_args()
    outcomes = asyncio.run(main_async(args))
    print(report(outcomes, args))
    if args.json:
        args.json.write_text(json.dumps([outcome.__dict__ for outcome in outcomes], default=list, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
