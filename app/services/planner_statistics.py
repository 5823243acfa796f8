"""Keeps the planner's statistics of the keyword postings current where autovacuum lags:
every `CHECK_SECONDS` it asks whether a memory type with many postings is missing from them,
and if so analyses the table (`repositories/planner_statistics.py` says why)."""

import logging

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.periodic import Periodic
from app.repositories import planner_statistics

logger = logging.getLogger(__name__)

CHECK_SECONDS = 60.0


async def refresh_postings_statistics(
    owner_engine: AsyncEngine, *, min_postings: int = planner_statistics.MIN_POSTINGS
) -> list[str]:
    """ANALYZE the keyword postings if their statistics miss a type with at least
    `min_postings` postings; the types they missed."""
    async with owner_engine.connect() as connection:
        missing = await planner_statistics.unknown_posting_types(
            connection, min_postings=min_postings
        )
        if missing:
            await planner_statistics.analyse_postings(connection)
            await connection.commit()
    if missing:
        logger.info("keyword postings analysed: the planner knew of no %s", ", ".join(missing))
    return missing


class PostingsStatistics:
    """The periodic check, started and stopped with the process."""

    def __init__(self, owner_engine: AsyncEngine, check_seconds: float = CHECK_SECONDS) -> None:
        self._engine = owner_engine
        self._checking = Periodic("engram-postings-statistics", check_seconds, self.check)

    async def check(self) -> None:
        """One check; a failure (the database down) is logged and the next check tries again."""
        try:
            await refresh_postings_statistics(self._engine)
        except (SQLAlchemyError, OSError) as error:
            logger.warning("keyword postings statistics not checked: %s", error)

    def start(self) -> None:
        """Check every interval from now on."""
        self._checking.start()

    async def stop(self) -> None:
        """Stop checking."""
        await self._checking.stop()
