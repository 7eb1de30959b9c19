"""Model calls and tokens per day and annotator: the `usage` table, so a budget and
`filescout status` survive restarts."""

from __future__ import annotations

from filescout.index.database import Database

DayUsage = tuple[str, int, int, int, int]
"""(day, calls, failures, input tokens, output tokens)"""


class UsageLog:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(
        self,
        annotator: str,
        day: str,
        *,
        calls: int = 0,
        failures: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        async with self._db.transaction() as db:
            await db.execute(
                """
                INSERT INTO usage(day, annotator, calls, failures, input_tokens, output_tokens)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(day, annotator) DO UPDATE SET
                    calls = calls + excluded.calls, failures = failures + excluded.failures,
                    input_tokens = input_tokens + excluded.input_tokens,
                    output_tokens = output_tokens + excluded.output_tokens
                """,
                (day, annotator, calls, failures, input_tokens, output_tokens),
            )

    async def since(self, first_day: str) -> list[DayUsage]:
        """Usage per day from `first_day`, all annotators together: a budget covers every
        model call."""
        rows = await self._db.reader.execute_fetchall(
            "SELECT day, sum(calls), sum(failures), sum(input_tokens), sum(output_tokens) "
            "FROM usage WHERE day >= ? GROUP BY day ORDER BY day",
            (first_day,),
        )
        return [
            (str(day), int(calls), int(failures), int(tokens_in), int(tokens_out))
            for day, calls, failures, tokens_in, tokens_out in rows
        ]
