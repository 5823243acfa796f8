"""pii_salts: one salt per tenant, kept once made."""

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import PiiSalt


async def ensure_salt(session: AsyncSession, *, tenant_id: str, candidate: str) -> str:
    """The tenant's salt; `candidate` becomes it when the tenant has none yet (the first of
    two concurrent callers wins, and both get its salt)."""
    await session.execute(
        insert(PiiSalt)
        .values(tenant_id=tenant_id, salt=candidate)
        .on_conflict_do_nothing(index_elements=[PiiSalt.tenant_id])
    )
    salt: str = (
        await session.execute(select(PiiSalt.salt).where(PiiSalt.tenant_id == tenant_id))
    ).scalar_one()
    return salt
