"""Erasure requests: what to erase, exactly one selector."""

from typing import Literal

from pydantic import Field, model_validator

from app.schemas.common import Name, RequestModel, SessionIdIn, UUIDIn

SELECTORS = ("butler", "scope", "subject", "entity_id", "session_id", "run_id", "task_id", "tenant")
Selector = Literal[
    "butler", "scope", "subject", "entity_id", "session_id", "run_id", "task_id", "tenant"
]


class ErasureCreate(RequestModel):
    """Exactly one of the selectors; a whole tenant also needs `confirm`."""

    butler: Name | None = Field(
        None,
        description="Episodes observed by this butler, the facts and rules whose "
        "source_butler it is, and the facts, rules and procedures "
        "consolidated from those episodes (their source, or linked "
        "derived_from one).",
    )
    scope: Name | None = Field(None, description="Facts and rules of this scope.")
    subject: Name | None = Field(
        None, description="Facts about this subject (compared case-folded), every version."
    )
    entity_id: UUIDIn | None = Field(
        None,
        description="The entity, the entities merged into it, and every version of their facts.",
    )
    session_id: SessionIdIn | None = Field(
        None,
        description="Episodes of this session (stored with this id, or placed in it "
        "by inference: their `inferred_session`) and the facts, rules and "
        "procedures consolidated from them (their source, or linked "
        "derived_from one).",
    )
    run_id: UUIDIn | None = Field(
        None,
        description="The task run with its messages and feedback, and the rules "
        "learned from it (run lessons).",
    )
    task_id: Name | None = Field(
        None,
        description="Every run of this task with their messages and feedback, and "
        "the rules learned from them.",
    )
    tenant: bool = Field(
        False,
        description="Everything of the caller's tenant: memories, "
        "entities, links, runs, agent ledgers, "
        "procedures, arcs, working memories, events, "
        "jobs, keyword statistics. API keys stay.",
    )
    confirm: Name | None = Field(
        None, description="Required with `tenant: true`: the tenant id itself, spelled out."
    )

    @model_validator(mode="after")
    def _one_selector(self) -> "ErasureCreate":
        chosen = [name for name in SELECTORS if getattr(self, name) not in (None, False)]
        if len(chosen) != 1:
            raise ValueError(
                f"give exactly one of {', '.join(SELECTORS)} (got {', '.join(chosen) or 'none'})"
            )
        if self.confirm is not None and not self.tenant:
            raise ValueError("confirm goes only with tenant: true")
        return self

    def selector(self) -> Selector:
        """The name of the one selector given."""
        for name in SELECTORS:
            if getattr(self, name) not in (None, False):
                return name  # type: ignore[return-value]
        raise AssertionError("validated to have one selector")
