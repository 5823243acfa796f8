"""What a key limited to butlers may change: its butlers' memories, nothing shared.

Row-level security already hides every other butler's rows (app/core/rls.py); these checks turn a
write aimed outside the key's butlers into a 403 that names the field, before any SQL runs.
"""

from app.core.constants import GLOBAL_SCOPE
from app.core.errors import Forbidden
from app.services import actors


def _limited_to() -> tuple[str, ...]:
    return actors.current().butlers


def describe(butlers: tuple[str, ...]) -> str:
    """'planner, critic'."""
    return ", ".join(butlers)


def check_butler(value: str, field: str) -> None:
    """Refuse a write for `value` (a butler, scope or agent) outside the key's butlers."""
    butlers = _limited_to()
    if butlers and value not in butlers:
        shared = " (the global scope is shared: read only)" if value == GLOBAL_SCOPE else ""
        raise Forbidden(
            f"this API key is limited to butlers {describe(butlers)}; it may not "
            f"write for {value!r}{shared}",
            field=field,
        )


def check_unlimited(what: str) -> None:
    """Refuse `what` (an operation over every butler) to a limited key."""
    butlers = _limited_to()
    if butlers:
        raise Forbidden(
            f"{what} needs an API key that is not limited to butlers; this one "
            f"is limited to {describe(butlers)}"
        )
