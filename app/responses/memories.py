"""Any memory (episode, fact or rule) as the API shows it."""

from datetime import datetime

from app.models import Episode, Fact, Rule
from app.responses.episodes import episode_out
from app.responses.facts import fact_out
from app.responses.rules import rule_out
from app.schemas.episodes import EpisodeOut
from app.schemas.facts import FactOut
from app.schemas.rules import RuleOut
from app.services.rule_reasons import ShownRule


def memory_out(
    row: Episode | Fact | Rule | ShownRule, now: datetime | None = None
) -> EpisodeOut | FactOut | RuleOut:
    """An episode, fact or rule row as the API shows it."""
    if isinstance(row, Episode):
        return episode_out(row)
    if isinstance(row, Fact):
        return fact_out(row, now)
    return rule_out(row, now)
