"""Calls to an OpenAI-compatible chat endpoint, made safe to run unattended.

Every call goes through one `ModelClient`: bounded concurrency, retries with exponential
backoff and jitter on 429/5xx/timeouts (honouring Retry-After), a circuit breaker that stops
hammering a dead endpoint, a token budget checked before and recorded after each call, and a
structured-output mode that falls back when a server does not support JSON schemas. `ask` turns
a call into a decoded msgspec answer, asking once more when the first one is malformed.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import logging
import math
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar
from urllib.parse import urlparse

import msgspec

from filescout_protocol.types import BudgetSettings, ModelSettings

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
"""Average for source code with the cl100k/o200k tokenizers (bench/annotation_bench.py
measures it on real repositories); used to plan requests before the server counts for real."""
BREAKER_THRESHOLD = 3
BREAKER_COOLDOWN = 30.0
BREAKER_MAX_COOLDOWN = 600.0
BACKOFF_BASE = 1.0
BACKOFF_CAP = 30.0
RETRY_AFTER_CAP = 120.0
StructuredMode = Literal["json_schema", "json_object", "none"]
STRUCTURED_MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "none")


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def text_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """The estimated tokens of the messages' text (of a list of parts, its text parts)."""
    total = 0
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            total += estimate_tokens(content)
        else:
            total += sum(
                estimate_tokens(part.get("text", "")) for part in content if part.get("type") == "text"
            )
    return total


class ModelError(Exception):
    """A model call did not produce an answer."""


class ModelUnavailable(ModelError):
    """The endpoint keeps failing (retries spent, or the circuit breaker is open)."""


class ModelRefused(ModelError):
    """The endpoint rejected the request for a reason retrying will not fix (API key, model
    name, permissions)."""


class BudgetSpent(ModelError):
    """The configured token budget for today or this month is used up."""


class MalformedAnswer(ModelError):
    """The model answered, but not with JSON of the expected shape, however often it was asked."""


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int


def provider_of(settings: ModelSettings) -> str:
    """A short label for the endpoint, used in annotator ids."""
    if settings.provider:
        return settings.provider
    if not settings.base_url:
        return "openai"
    parsed = urlparse(settings.base_url)
    host, port = parsed.hostname or "", parsed.port
    known = {11434: "ollama", 1234: "lmstudio", 8080: "llamacpp", 8000: "vllm"}
    if host in ("127.0.0.1", "localhost", "::1") and port in known:
        return known[port]
    if host.endswith("openai.com"):
        return "openai"
    return re.sub(r"[^a-z0-9.\-]", "-", f"{host}:{port}" if port else host) or "custom"


def retry_after(error: BaseException) -> float | None:
    """Seconds the server asked us to wait (Retry-After in seconds or as an HTTP date, or
    retry-after-ms), capped."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    if headers.get("retry-after-ms"):
        try:
            return min(float(headers["retry-after-ms"]) / 1000, RETRY_AFTER_CAP)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return min(max(float(value), 0.0), RETRY_AFTER_CAP)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max((when - datetime.now(timezone.utc)).total_seconds(), 0.0), RETRY_AFTER_CAP)


def _openai() -> Any:
    """The openai package, imported on first use: it takes half a second to import, and a
    server without a model configured never needs it."""
    import openai

    return openai


def is_retryable(error: BaseException) -> bool:
    openai = _openai()
    if isinstance(error, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in (408, 409, 425, 429) or error.status_code >= 500
    return False


def _not_connected(error: BaseException) -> bool:
    """Whether the call failed to connect at all (refused, no such host): nothing listens.
    Told by the HTTP client's own error under openai's (whichever httpx it is built on)."""
    if not isinstance(error, _openai().APIConnectionError) or isinstance(error, _openai().APITimeoutError):
        return False
    return type(error.__cause__).__name__ == "ConnectError"


class CircuitBreaker:
    """Open after `threshold` failed calls in a row; let one call through after a cooldown
    that doubles each time the trial fails."""

    def __init__(
        self,
        cooldown: float = BREAKER_COOLDOWN,
        clock: Callable[[], float] = time.monotonic,
        *,
        threshold: int = BREAKER_THRESHOLD,
    ) -> None:
        self._clock = clock
        self.threshold = threshold
        self.failures = 0
        self.initial_cooldown = cooldown
        self.cooldown = cooldown
        self.open_until = 0.0

    @property
    def is_open(self) -> bool:
        return self.failures >= self.threshold and self._clock() < self.open_until

    def seconds_left(self) -> float:
        return max(0.0, self.open_until - self._clock()) if self.failures >= self.threshold else 0.0

    def success(self) -> None:
        self.failures = 0
        self.cooldown = self.initial_cooldown

    def failure(self) -> None:
        self.failures += 1
        if self.failures == self.threshold:
            self.open_until = self._clock() + self.cooldown
            if self.threshold == 1:  # a one-shot command: its own output says what failed
                log.info("model endpoint failed a call; no more model calls in this run")
            else:
                log.warning(
                    "model endpoint failed %d times in a row; pausing model calls for %.0f s",
                    self.failures,
                    self.cooldown,
                )
        elif self.failures > self.threshold and self._clock() >= self.open_until:
            # The trial call after a cooldown failed too (calls that were already under way
            # when the circuit opened fail inside the cooldown and do not count as trials).
            self.cooldown = min(self.cooldown * 2, BREAKER_MAX_COOLDOWN)
            self.open_until = self._clock() + self.cooldown


UsageSink = Callable[[str, int, int, int, int], Awaitable[None]]
"""(day, calls, failures, input tokens, output tokens) -> stored"""


class Budget:
    """Token totals for today and this month, kept in memory and persisted through a sink."""

    def __init__(
        self, settings: BudgetSettings, history: list[tuple[str, int, int, int, int]], sink: UsageSink
    ) -> None:
        self.settings = settings
        self.days: dict[str, list[int]] = {
            day: [calls, failures, tokens_in, tokens_out]
            for day, calls, failures, tokens_in, tokens_out in history
        }
        self._sink = sink

    @staticmethod
    def today() -> str:
        return date.today().isoformat()

    def _tokens(self, prefix: str) -> int:
        return sum(v[2] + v[3] for day, v in self.days.items() if day.startswith(prefix))

    @property
    def tokens_today(self) -> int:
        return self._tokens(self.today())

    @property
    def tokens_this_month(self) -> int:
        return self._tokens(self.today()[:7])

    @property
    def calls(self) -> int:
        return sum(v[0] for v in self.days.values())

    @property
    def failures(self) -> int:
        return sum(v[1] for v in self.days.values())

    def spent(self, planned: int = 0) -> str | None:
        """Why a call of `planned` tokens must not be made, or None."""
        daily, monthly = self.settings.daily_tokens, self.settings.monthly_tokens
        need = f"; the next request needs about {planned}" if planned else ""
        if daily is not None and self.tokens_today + planned > daily:
            return f"the daily budget of {daily} tokens is spent ({self.tokens_today} used today{need})"
        if monthly is not None and self.tokens_this_month + planned > monthly:
            return (
                f"the monthly budget of {monthly} tokens is spent "
                f"({self.tokens_this_month} used this month{need})"
            )
        return None

    async def record(
        self, *, calls: int = 0, failures: int = 0, input_tokens: int = 0, output_tokens: int = 0
    ) -> None:
        day = self.today()
        totals = self.days.setdefault(day, [0, 0, 0, 0])
        for index, value in enumerate((calls, failures, input_tokens, output_tokens)):
            totals[index] += value
        await self._sink(day, calls, failures, input_tokens, output_tokens)


class ModelClient:
    def __init__(
        self,
        settings: ModelSettings,
        budget: Budget,
        client: openai.AsyncOpenAI | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        *,
        one_shot: bool = False,
    ) -> None:
        """`one_shot`: a command someone waits on at a terminal, which gives up on a failing
        endpoint at the first call that fails, and at once on one it cannot reach; a server waits
        failures out (retries, then the breaker's pauses)."""
        if not settings.model:
            raise ValueError("no model configured")
        self.settings = settings
        self.budget = budget
        self.name = f"{provider_of(settings)}/{settings.model}"
        self.one_shot = one_shot
        self.breaker = CircuitBreaker(settings.failure_pause, threshold=1 if one_shot else BREAKER_THRESHOLD)
        self.last_failure = ""
        self.refused: str | None = None
        self._sleep = sleep
        self._gate = asyncio.Semaphore(settings.concurrency)
        self._retrying_until = 0.0
        self._retrying_after = ""
        self._modes: list[StructuredMode] = (
            list(STRUCTURED_MODES) if settings.structured_output == "auto" else [settings.structured_output]
        )
        self._client = client or _openai().AsyncOpenAI(
            api_key=settings.api_key or "not-needed",
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,  # retries are ours: backoff with jitter, Retry-After, the breaker
        )

    async def close(self) -> None:
        await self._client.close()

    def retry_note(self) -> str | None:
        """What a call waiting to try again is waiting out (a long Retry-After, say), or None."""
        left = self._retrying_until - time.monotonic()
        if left < 1:
            return None
        return f"model call failed ({self._retrying_after}); trying again in {left:.0f} s"

    def unavailable_reason(self) -> str | None:
        """Why no call would be attempted right now, or None."""
        if self.refused:
            return self.refused
        if self.breaker.is_open and self.one_shot:
            return f"the model endpoint is failing ({self.last_failure})"
        if self.breaker.is_open:
            return f"the model endpoint is failing; retrying in {self.breaker.seconds_left():.0f} s"
        return self.budget.spent()

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any],
        schema_name: str,
        max_output_tokens: int,
        deadline: float | None = None,
        retries: int | None = None,
        picture_tokens: int = 0,
    ) -> Completion:
        """One chat completion that should return JSON matching `schema`. A caller someone
        waits on gives a `deadline` (time.monotonic()) and fewer `retries`: then no wait for a
        turn, no attempt and no backoff reaches past the deadline, and a call that timed out is
        not made again. Every attempt ends within the timeout setting, however the server
        answers (a server that sends a byte a second never trips the HTTP client's read timeout).
        `picture_tokens`: what the messages' pictures count at the endpoint's image rate, planned
        and charged with their text (an endpoint that reports usage counts them itself)."""
        planned = text_tokens(messages) + picture_tokens + max_output_tokens
        allowed = self.settings.max_retries if retries is None else min(retries, self.settings.max_retries)
        attempt = 0
        while True:
            async with self._turn(planned, deadline):
                try:
                    return await self._call(
                        messages, schema, schema_name, max_output_tokens, deadline, picture_tokens
                    )
                except _Retryable as failure:
                    delay = self._retry_delay(failure, attempt, allowed, deadline)
                    if delay is None:
                        self.last_failure = str(failure)
                        self.breaker.failure()
                        await self.budget.record(failures=1)
                        raise ModelUnavailable(f"model call failed: {failure}") from failure.__cause__
                    problem = str(failure)
            attempt += 1
            log.info("model call failed (%s); retry %d in %.1f s", problem, attempt, delay)
            if time.monotonic() + delay > self._retrying_until:
                self._retrying_until, self._retrying_after = time.monotonic() + delay, problem
            await self._sleep(delay)  # outside the gate: a call waiting out a 429 holds no slot

    @contextlib.asynccontextmanager
    async def _turn(self, planned: int, deadline: float | None) -> AsyncIterator[None]:
        """A slot among the `concurrency` calls in flight, with the breaker and budget checked
        once it is ours: calls queued here see what the last one learned."""
        if deadline is None:
            await self._gate.acquire()
        else:
            try:
                await asyncio.wait_for(self._gate.acquire(), max(deadline - time.monotonic(), 0.0))
            except asyncio.TimeoutError:
                raise ModelUnavailable(
                    "the model was busy with other calls until this request's time ran out"
                ) from None
        try:
            if self.refused:
                raise ModelRefused(self.refused)
            if self.breaker.is_open:
                raise ModelUnavailable(f"circuit open for {self.breaker.seconds_left():.0f} s more")
            reason = self.budget.spent(planned)
            if reason:
                raise BudgetSpent(reason)
            yield
        finally:
            self._gate.release()

    def _retry_delay(
        self, failure: _Retryable, attempt: int, allowed: int, deadline: float | None
    ) -> float | None:
        """Seconds to wait before trying again, or None when the call must give up: retries
        spent, or (for a caller with a deadline) a timeout, or a wait that would end too late."""
        if attempt >= allowed or (deadline is not None and failure.timed_out):
            return None
        if self.one_shot and failure.unreachable:
            return None  # nothing listens there (or no such host): no one waits for it to start
        delay = retry_after(failure.error)
        if delay is None:
            delay = min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt) * random.uniform(0.5, 1.5)
        if deadline is not None and time.monotonic() + delay >= deadline:
            return None
        return delay

    def _attempt_seconds(self, deadline: float | None) -> float:
        if deadline is None:
            return self.settings.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise ModelUnavailable("this request's time for model calls ran out")
        return min(self.settings.timeout, left)

    async def _call(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        schema_name: str,
        max_output_tokens: int,
        deadline: float | None,
        picture_tokens: int = 0,
    ) -> Completion:
        """One attempt (stepping down the response format where the endpoint rejects it).
        Raises _Retryable for what may work next time, a ModelError for what will not."""
        openai = _openai()
        while True:
            mode = self._modes[0]
            seconds = self._attempt_seconds(deadline)
            try:
                response = await asyncio.wait_for(
                    self._client.chat.completions.create(
                        model=self.settings.model,  # type: ignore[arg-type]  # set: checked in __init__
                        messages=messages,  # type: ignore[arg-type]  # plain dicts of openai's TypedDict shape
                        temperature=0,
                        max_tokens=max_output_tokens,
                        **_response_format(mode, schema, schema_name),
                    ),
                    seconds,
                )
                text, usage = completion_parts(response)
            except asyncio.TimeoutError as error:
                raise _Retryable(error, f"no answer within {seconds:.3g} s", timed_out=True) from error
            except openai.BadRequestError as error:
                if len(self._modes) > 1 and _about_response_format(error):
                    if self._modes[0] == mode:  # a concurrent call may have stepped down already
                        log.info(
                            "the endpoint does not take response_format=%s; trying %s", mode, self._modes[1]
                        )
                        self._modes.pop(0)
                    continue
                await self.budget.record(failures=1)
                raise ModelError(f"the endpoint rejected the request: {_detail(error)}") from error
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as error:
                self.refused = f"the model endpoint refused the request: {_detail(error)}"
                log.error("%s; model annotation is off until the settings change", self.refused)
                await self.budget.record(failures=1)
                raise ModelRefused(self.refused) from error
            except Exception as error:
                if not is_retryable(error):
                    self.last_failure = _detail(error)
                    self.breaker.failure()
                    await self.budget.record(failures=1)
                    raise ModelUnavailable(f"model call failed: {_detail(error)}") from error
                timed_out = isinstance(error, openai.APITimeoutError)
                raise _Retryable(
                    error,
                    _detail(error),
                    timed_out=timed_out,
                    unreachable=_not_connected(error),
                ) from error
            self.breaker.success()
            input_tokens = usage[0] if usage[0] is not None else text_tokens(messages) + picture_tokens
            output_tokens = usage[1] if usage[1] is not None else estimate_tokens(text)
            await self.budget.record(calls=1, input_tokens=input_tokens, output_tokens=output_tokens)
            return Completion(text=text, input_tokens=input_tokens, output_tokens=output_tokens)


class _Retryable(Exception):
    """An attempt failed in a way the next one may not (429, 5xx, a dropped connection, a
    timeout)."""

    def __init__(
        self, error: BaseException, detail: str, *, timed_out: bool, unreachable: bool = False
    ) -> None:
        super().__init__(detail)
        self.error = error
        self.timed_out = timed_out
        self.unreachable = unreachable
        """The connection failed before any answer: refused, reset, or no such host."""


class NotACompletion(ValueError):
    """The endpoint answered 200 with something that is not a chat completion."""


def _token_count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def completion_parts(response: Any) -> tuple[str, tuple[int | None, int | None]]:
    """The answer's text and the token counts the server reported (None where it reported none
    that could be true). The openai package builds its response objects without validating
    them, so whatever a server or a proxy in front of it sends arrives here: anything that is
    not a chat completion raises NotACompletion rather than escaping as a TypeError."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list):
        raise NotACompletion("the endpoint's answer is not a chat completion (it has no list of choices)")
    text = ""
    if choices:
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None) if message is not None else None
        if message is None or not isinstance(content, (str, type(None))):
            raise NotACompletion(
                "the endpoint's answer is not a chat completion (its choice has no message text)"
            )
        text = content or ""
    usage = getattr(response, "usage", None)
    return text, (
        _token_count(getattr(usage, "prompt_tokens", None)),
        _token_count(getattr(usage, "completion_tokens", None)),
    )


def _response_format(mode: StructuredMode, schema: dict[str, Any], name: str) -> dict[str, Any]:
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": schema},
            }
        }
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _about_response_format(error: openai.BadRequestError) -> bool:
    text = str(error).lower()
    return any(
        word in text for word in ("response_format", "json_schema", "json_object", "structured", "schema")
    )


def _detail(error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):  # raised by the openai package on a body not JSON
        return f"the endpoint's answer is not JSON ({error.msg}, character {error.pos})"
    status = getattr(error, "status_code", None)
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    if _not_connected(error) and str(error.__cause__):
        message = f"{message.rstrip('.')}: {error.__cause__}"  # "Connection error: [Errno 111] ..."
    return f"{status} {message}" if status else message


FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str, type_: type[Any]) -> Any:
    """Decode `text` as `type_`, tolerating code fences and prose around the JSON object."""
    candidates = [text]
    fenced = FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1))
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error: Exception | None = None
    for candidate in candidates:
        try:
            return msgspec.json.decode(candidate.strip().encode(), type=type_)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            error = exc
    raise ValueError(f"the model's answer is not valid JSON of the expected shape: {error}")


NUMERIC_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
SUBSCHEMA_KEYS = ("items", "additionalProperties", "not")
SUBSCHEMA_LIST_KEYS = ("anyOf", "allOf", "oneOf", "prefixItems")
SUBSCHEMA_MAP_KEYS = ("properties", "$defs")


def _drop_numeric_bounds(schema: dict[str, Any]) -> None:
    """Structured-output endpoints reject numeric bounds; msgspec still enforces them when the
    answer is decoded. Only schema keywords are walked, so a field named `minimum` stays."""
    for key in NUMERIC_BOUNDS:
        schema.pop(key, None)
    for key in SUBSCHEMA_KEYS:
        if isinstance(schema.get(key), dict):
            _drop_numeric_bounds(schema[key])
    for key in SUBSCHEMA_LIST_KEYS:
        for part in schema.get(key, ()):
            _drop_numeric_bounds(part)
    for key in SUBSCHEMA_MAP_KEYS:
        for part in schema.get(key, {}).values():
            _drop_numeric_bounds(part)


@functools.cache
def strict_schema(answer: type) -> dict[str, Any]:
    """The JSON schema of a msgspec Struct in the strict form structured-output endpoints
    accept: every property required, no additional properties, no numeric bounds, nested
    Structs under `$defs`. Cached per type; callers must not change it."""
    (root,), components = msgspec.json.schema_components([answer], ref_template="#/$defs/{name}")
    for part in components.values():
        part.pop("title", None)
        if part.get("type") == "object":
            part["additionalProperties"] = False
            part["required"] = list(part.get("properties", {}))
    schema = components.pop(root["$ref"].rsplit("/", 1)[-1])
    if components:
        schema["$defs"] = components
    _drop_numeric_bounds(schema)
    return schema


ASK_AGAIN = "Answer with the JSON object only."
"""Appended when an answer was malformed: most models then drop the prose or the fences."""

AnswerT = TypeVar("AnswerT", bound=msgspec.Struct)


class Completes(Protocol):
    """What `ask` calls: the ModelClient itself, or a wrapper that rations its calls."""

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any],
        schema_name: str,
        max_output_tokens: int,
    ) -> Completion: ...


@dataclass(frozen=True, slots=True)
class Answer(Generic[AnswerT]):
    """A decoded answer and what all the calls for it cost (a malformed first answer is paid
    for too)."""

    value: AnswerT
    input_tokens: int
    output_tokens: int
    calls: int


async def ask(
    client: Completes,
    messages: list[dict[str, str]],
    answer: type[AnswerT],
    *,
    name: str,
    max_output_tokens: int,
    attempts: int = 2,
    ask_again: str = ASK_AGAIN,
) -> Answer[AnswerT]:
    """Ask for an answer of the msgspec type `answer`, under the strict JSON schema derived from
    it (the client steps down to JSON mode or plain text where a server needs it, and
    `extract_json` tolerates fences and prose). A malformed answer is asked for again, with
    `ask_again` appended, up to `attempts` calls in all; then MalformedAnswer. Errors of the
    client itself (unavailable, refused, budget) pass through."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    schema = strict_schema(answer)
    input_tokens = output_tokens = 0
    problem: ValueError | None = None
    for attempt in range(1, attempts + 1):
        completion = await client.complete(
            messages, schema=schema, schema_name=name, max_output_tokens=max_output_tokens
        )
        input_tokens += completion.input_tokens
        output_tokens += completion.output_tokens
        try:
            value = extract_json(completion.text, answer)
        except ValueError as error:
            problem = error
            if attempt < attempts:
                log.info("the model's %s answer is malformed (%s); asking again", name, error)
                if attempt == 1:
                    messages = [*messages, {"role": "user", "content": ask_again}]
            continue
        return Answer(value, input_tokens, output_tokens, attempt)
    times = {1: "once", 2: "twice"}.get(attempts, f"{attempts} times")
    raise MalformedAnswer(f"the model's {name} answer was malformed {times}: {problem}") from problem
