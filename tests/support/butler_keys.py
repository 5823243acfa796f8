"""Keys limited to butlers for the tests (clients with them: the `limited_client` fixture)."""

from typing import Any

from app.core.scope import SYSTEM, scoped_transaction
from app.services import api_keys


async def mint_limited_key(
    app: Any, tenant_id: str, butlers: list[str], *, access: str = "write"
) -> str:
    """A live key of `tenant_id` limited to `butlers`; its secret."""
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(
            session, tenant_id=tenant_id, butlers=butlers, access=access
        )
    return minted.secret
