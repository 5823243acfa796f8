"""Tools renamed to follow one naming rule still answer to their old names.

A tool is `<noun>_<verb>[_<object>]`: the noun is `memory` for the tools on episodes, facts and
rules, else the domain the tool acts on (`entity_`, `run_`, `procedure_`, ...). The old names
are accepted in `tools/call` and left out of `tools/list`, so clients written against them keep
working and an agent is shown each tool once.
"""

from dataclasses import replace
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

# The old name of each renamed tool and its name now.
OLD_NAMES: dict[str, str] = {
    "episode_list": "memory_list_episodes",
    "fact_list": "memory_list_facts",
    "fact_history": "memory_fact_history",
    "rule_list": "memory_list_rules",
    "rule_invert": "memory_invert_rule",
}


class AcceptOldNames:
    """Server middleware: a `tools/call` to an old name calls the tool under its new name."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params
        if ctx.method == "tools/call" and params is not None:
            new = OLD_NAMES.get(str(params.get("name")))
            if new is not None:
                ctx = replace(ctx, params={**params, "name": new})
        return await call_next(ctx)
