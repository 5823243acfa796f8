"""JSON Merge Patch (RFC 7396) as a pure function."""

from typing import Any


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """The result of applying `patch` to `target`: objects merge key by key, a null removes
    the key, anything else (arrays included) replaces the value."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result
