"""The reflection job: the configured LLM turns an agent's pending events into one belief.

Read the agent's view in one transaction, ask the model with no transaction open, then write
the reflection in another (under the agent's advisory lock, re-checking that it is still due,
so two jobs never reflect twice over the same events).
"""

import json
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import InvalidInput
from app.core.scope import Scope
from app.formulas import salience
from app.formulas.salience import GLOBAL, LedgerEvent
from app.repositories import ledger as ledger_rows
from app.services.embeddings import embed_texts
from app.services.jobs import JobContext, JobOutcome
from app.services.ledger import ledger_event, write_reflection
from app.worker.consolidation.parser import extract_json_block
from app.worker.llm import ChatClient, ChatMessage, LLMError

MAX_BELIEF_CHARS = 2000
SYSTEM_PROMPT = (
    "You are the reflective memory of an agent in a multi-agent simulation. Read the events "
    "the agent has seen and state ONE high-level belief that synthesises them. Answer with a "
    'JSON object: {"belief": "<one sentence>", "based_on": ["<event id>", ...]} where '
    "based_on lists the ids of the events that support the belief."
)


def reflection_prompt(agent_id: str, pending: list[LedgerEvent]) -> str:
    """The user message: the agent and its pending events, one per line with their ids."""
    lines = [
        f'<event id="{e.id}" turn="{e.turn}" agent="{e.agent_id}" kind="{e.kind}">'
        f"{' '.join(e.content.split())}</event>"
        for e in pending
    ]
    return f"Agent: {agent_id}\nEvents since its last reflection:\n" + "\n".join(lines)


@dataclass(frozen=True)
class ParsedReflection:
    belief: str
    based_on: list[uuid.UUID]


def parse_reflection(output: str, pending: list[LedgerEvent]) -> ParsedReflection | None:
    """The belief and its sources from the model's answer; sources outside `pending` are
    dropped and none left means all of `pending`. None when there is no usable belief."""
    block = extract_json_block(output or "")
    try:
        data: Any = json.loads(block) if block else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("belief"), str):
        return None
    belief = " ".join(data["belief"].replace("\x00", "").split())[:MAX_BELIEF_CHARS]
    if not belief:
        return None
    allowed = {str(e.id): e.id for e in pending}
    cited = data.get("based_on")
    chosen = (
        [allowed[str(i)] for i in cited if str(i) in allowed] if isinstance(cited, list) else []
    )
    return ParsedReflection(belief, chosen or [e.id for e in pending])


async def _unreflected(
    session: AsyncSession, ctx: JobContext, tenant_id: str, ledger: str, agent_id: str
) -> list[LedgerEvent]:
    rows = await ledger_rows.viewer_events(
        session,
        tenant_id=tenant_id,
        ledger=ledger,
        agent_id=agent_id,
        global_visibility=GLOBAL,
        limit=ctx.settings.agent_memory.max_candidates,
    )
    return salience.pending_events([ledger_event(row) for row in rows], agent_id)


async def _pending(
    ctx: JobContext, tenant_id: str, ledger: str, agent_id: str
) -> list[LedgerEvent]:
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        pending = await _unreflected(session, ctx, tenant_id, ledger, agent_id)
    return pending if len(pending) >= ctx.settings.agent_memory.reflection_threshold else []


async def run_reflection(
    ctx: JobContext, *, tenant_id: str, ledger: str, agent_id: str
) -> JobOutcome:
    """Reflect for one agent when it is due; the job's result says what happened."""
    if not ctx.settings.llm.base_url:
        return JobOutcome(result={"reflected": 0, "reason": "no LLM configured"})
    pending = await _pending(ctx, tenant_id, ledger, agent_id)
    if not pending:
        return JobOutcome(result={"reflected": 0, "reason": "no reflection due"})
    try:
        async with ChatClient(ctx.settings.llm) as client:
            answer = await client.complete(
                [
                    ChatMessage("system", SYSTEM_PROMPT),
                    ChatMessage("user", reflection_prompt(agent_id, pending)),
                ]
            )
    except LLMError as exc:
        return JobOutcome(result={"reflected": 0}, errors=[str(exc)], failed=True)
    parsed = parse_reflection(answer, pending)
    if parsed is None:
        return JobOutcome(
            result={"reflected": 0},
            errors=["the model's answer holds no JSON object with a belief"],
            failed=True,
        )
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        embedded = await embed_texts(
            session, ctx.embedder, [parsed.belief], tenant_id=tenant_id, bulk=True
        )
        await ledger_rows.lock_agent(session, tenant_id=tenant_id, ledger=ledger, agent_id=agent_id)
        still = {e.id for e in await _unreflected(session, ctx, tenant_id, ledger, agent_id)}
        if not set(parsed.based_on) <= still:
            return JobOutcome(result={"reflected": 0, "reason": "reflected meanwhile"})
        try:
            reflection = await write_reflection(
                session,
                tenant_id=tenant_id,
                ledger=ledger,
                agent_id=agent_id,
                belief=parsed.belief,
                based_on=parsed.based_on,
                turn=None,
                vectors=embedded.columns(0),
            )
        except InvalidInput as exc:
            return JobOutcome(result={"reflected": 0}, errors=[exc.detail], failed=True)
    return JobOutcome(
        result={
            "reflected": 1,
            "reflection_id": str(reflection.event.id),
            "based_on": len(reflection.based_on),
        }
    )
