"""What a hook is told before it reads its payload: the events, where Engram is, how long a
hook may take, and which project (so which butler) a payload belongs to. Standard library
only: the hooks that hand their work off import nothing else before they return."""

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

# The events that add memories to the model's context.
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")
# The events whose transcript is stored by a detached process, so the hook returns at once.
HANDOFF_EVENTS = ("PreCompact", "SessionEnd")
CAPTURE_EVENTS = ("Stop", *HANDOFF_EVENTS)
EVENTS = CONTEXT_EVENTS + CAPTURE_EVENTS

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_SECONDS = 3.0
DEFAULT_UPLOAD_SECONDS = 60.0
DEFAULT_TOKEN_BUDGET = 1500
MAX_NAME_CHARS = 200
SOURCE = "claude-code"


@dataclass(frozen=True)
class HookConfig:
    """Where Engram is, how long and how much a hook may take, and the project it is in."""

    url: str
    api_key: str | None
    timeout: float
    token_budget: int
    butler: str | None
    state_dir: Path
    upload_timeout: float = DEFAULT_UPLOAD_SECONDS
    project_dir: str | None = None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "HookConfig":
        """The configuration the environment gives (ENGRAM_URL, ENGRAM_API_KEY, ...)."""
        env = dict(os.environ if environ is None else environ)
        url = env.get("ENGRAM_URL") or DEFAULT_URL
        return cls(
            url=url.rstrip("/"),
            api_key=env.get("ENGRAM_API_KEY") or None,
            timeout=_positive(env.get("ENGRAM_HOOK_TIMEOUT"), DEFAULT_TIMEOUT_SECONDS),
            token_budget=int(_positive(env.get("ENGRAM_HOOK_TOKEN_BUDGET"), DEFAULT_TOKEN_BUDGET)),
            butler=env.get("ENGRAM_BUTLER") or None,
            state_dir=state_dir(env),
            upload_timeout=_positive(env.get("ENGRAM_HOOK_UPLOAD_TIMEOUT"), DEFAULT_UPLOAD_SECONDS),
            project_dir=env.get("CLAUDE_PROJECT_DIR") or None,
        )

    def butler_of(self, cwd: object) -> str:
        """The butler of a payload's memories: ENGRAM_BUTLER, else its project's."""
        if self.butler:
            return self.butler
        return butler_for(project_dir(self.project_dir, cwd if isinstance(cwd, str) else None))


def _positive(raw: str | None, default: float) -> float:
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if value > 0 else default


def state_dir(env: dict[str, str]) -> Path:
    """Where the hooks keep what they noted: ENGRAM_HOOK_STATE_DIR, else
    $XDG_STATE_HOME/engram/claude-code (default ~/.local/state/engram/claude-code)."""
    if explicit := env.get("ENGRAM_HOOK_STATE_DIR"):
        return Path(explicit).expanduser()
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home(), ".local", "state"))
    return Path(base).expanduser() / "engram" / "claude-code"


def project_dir(claude_project_dir: str | None, cwd: str | None) -> str:
    """The project a hook runs for: Claude Code's CLAUDE_PROJECT_DIR when set, else the git
    checkout holding `cwd` (the nearest directory up from it with a `.git`), else `cwd`."""
    if claude_project_dir:
        return os.path.realpath(claude_project_dir)
    start = os.path.realpath(cwd or os.getcwd())
    return git_root(start) or start


def git_root(path: str) -> str | None:
    """The nearest directory at or above `path` holding a `.git` (a directory, or the file
    of a worktree or submodule); None when there is none."""
    current = path
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def butler_for(path: str) -> str:
    """The butler a project directory's memories belong to: `claude-code:<name>-<hash>`, the
    directory's name and 8 hex digits of its absolute path (two checkouts named alike stay
    apart)."""
    path = os.path.realpath(path)
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    name = os.path.basename(path.rstrip(os.sep)) or "root"
    return f"{SOURCE}:{name[: MAX_NAME_CHARS - 30]}-{digest}"


class Deadline:
    """The time left of a hook's total allowance."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left (at least a millisecond, so a timeout is never zero)."""
        return max(self.end - time.monotonic(), 0.001)

    def passed(self) -> bool:
        """Whether the allowance is spent."""
        return time.monotonic() >= self.end
