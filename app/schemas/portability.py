"""Import answers."""

from pydantic import BaseModel, Field


class ImportOut(BaseModel):
    """What an import inserted, per record kind."""

    imported: dict[str, int] = Field(
        description="Records inserted per kind: entity, episode, fact, rule, "
        "rule_application, run, run_message, run_feedback, agent_event, "
        "reflection_consolidation, procedure, arc, working_memory, link."
    )
