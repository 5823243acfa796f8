"""Rules as the API shows them."""

from datetime import datetime

from app.models import Rule
from app.responses.confidence import with_confidence
from app.schemas.rules import RuleOut
from app.services.rule_reasons import ShownRule


def rule_out(rule: Rule | ShownRule, now: datetime | None = None) -> RuleOut:
    """A rule as the API shows it, with its decayed confidence and lifecycle flags; the
    reasons of its harmful marks, when it has any, in `metadata.harmful_reasons`."""
    row, reasons = (rule.row, rule.harmful_reasons) if isinstance(rule, ShownRule) else (rule, [])
    values = {
        **with_confidence(row, now),
        "fading": row.fading_since is not None,
        "forgotten": row.forgotten_at is not None,
    }
    if reasons:
        values["metadata_"] = {**row.metadata_, "harmful_reasons": reasons}
    return RuleOut.model_validate(values)
