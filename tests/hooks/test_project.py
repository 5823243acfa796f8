"""The project a hook runs for: CLAUDE_PROJECT_DIR, else the git checkout of the payload's
cwd, else the cwd, so a prompt from a subdirectory finds the project's memories."""

from pathlib import Path

from engram_client.hooks.config import HookConfig, butler_for, project_dir


def test_the_checkout_of_a_subdirectory_is_the_project(tmp_path: Path) -> None:
    project = tmp_path / "helios-api"
    (project / ".git").mkdir(parents=True)
    (project / "src" / "api").mkdir(parents=True)

    assert project_dir(None, str(project / "src" / "api")) == str(project.resolve())
    assert project_dir(None, str(project)) == str(project.resolve())


def test_a_worktree_whose_git_is_a_file_is_a_project(tmp_path: Path) -> None:
    worktree = tmp_path / "checkouts" / "feature"
    (worktree / "docs").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/feature\n")

    assert project_dir(None, str(worktree / "docs")) == str(worktree.resolve())


def test_claude_project_dir_wins_and_without_git_the_cwd_is_the_project(tmp_path: Path) -> None:
    plain = tmp_path / "notes" / "week"
    plain.mkdir(parents=True)
    other = tmp_path / "other"
    other.mkdir()

    assert project_dir(str(other), str(plain)) == str(other.resolve())
    assert project_dir(None, str(plain)) == str(plain.resolve())


def test_the_butler_comes_from_the_project_unless_engram_butler_names_one(tmp_path: Path) -> None:
    project = tmp_path / "helios-api"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    env = {"HOME": str(tmp_path)}

    from_cwd = HookConfig.from_env(env).butler_of(str(project / "src"))
    from_env = HookConfig.from_env({**env, "CLAUDE_PROJECT_DIR": str(project / "src")})
    named = HookConfig.from_env({**env, "ENGRAM_BUTLER": "team-memory"})

    assert from_cwd == butler_for(str(project)) and from_cwd.startswith("claude-code:helios-api-")
    assert from_env.butler_of(str(tmp_path)) == butler_for(str(project / "src"))
    assert named.butler_of(str(project)) == "team-memory"
