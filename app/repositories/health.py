"""The database probe behind /readyz."""

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine


async def ping(engine: AsyncEngine) -> None:
    """Run a trivial query on a fresh connection; raises when the database is unreachable."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
