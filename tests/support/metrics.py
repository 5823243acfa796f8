"""Read the Prometheus text of /metrics."""

import re


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition text (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
    pattern = (
        rf"^{re.escape(name)}{{{re.escape(wanted)}}} (\S+)$"
        if labels
        else rf"^{re.escape(name)} (\S+)$"
    )
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0
