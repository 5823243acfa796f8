"""Episodes as the API shows them."""

from app.models import Episode
from app.schemas.episodes import EpisodeOut


def episode_out(row: Episode) -> EpisodeOut:
    """An episode as the API shows it."""
    return EpisodeOut.model_validate(row)
