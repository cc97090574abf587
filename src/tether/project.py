"""Where things live: the project root, `.tether/`, and the user's `$TETHER_HOME`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tether.errors import NoProjectError

TETHER_DIR = ".tether"
_GITIGNORE = "# Derived and local files: the index is rebuilt from the notes.\nindex.db*\nlogs/\nsessions/\ndistill/\n*.tmp\n.lock\n"


def user_home(environ: dict[str, str] | None = None) -> Path:
    """`$TETHER_HOME`, else the XDG data dir (`~/.local/share/tether`). Relocates all user data."""
    env = os.environ if environ is None else environ
    if env.get("TETHER_HOME"):
        return Path(env["TETHER_HOME"]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tether"


def find_git_root(start: Path) -> Path | None:
    """Walk up from `start` to the nearest directory holding `.git` (a dir, or a file for worktrees)."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def find_project_root(start: Path) -> Path | None:
    """The nearest ancestor with `.tether/`, not crossing above the git root."""
    current = start.resolve()
    git_root = find_git_root(current)
    for candidate in (current, *current.parents):
        if (candidate / TETHER_DIR).is_dir() and (candidate / TETHER_DIR / "memories").is_dir():
            return candidate
        if candidate == git_root:
            break
    return None


@dataclass(frozen=True)
class Paths:
    """Every location tether uses for one project (or for user memory alone when `root` is None)."""

    root: Path | None
    home: Path

    @property
    def tether_dir(self) -> Path:
        return self.root / TETHER_DIR if self.root else self.home

    @property
    def project_notes(self) -> Path | None:
        return self.root / TETHER_DIR / "memories" if self.root else None

    @property
    def user_notes(self) -> Path:
        return self.home / "memories"

    @property
    def index(self) -> Path:
        return self.tether_dir / "index.db"

    @property
    def logs(self) -> Path:
        return self.tether_dir / "logs"

    @property
    def config_files(self) -> tuple[Path, ...]:
        user = self.home / "config.toml"
        return (user, self.root / TETHER_DIR / "config.toml") if self.root else (user,)

    @property
    def pending(self) -> Path:
        """Agent writes waiting for `tether review` (`tether.notes.pending`): local, never committed."""
        return self.tether_dir / "pending"

    @property
    def approvals(self) -> Path:
        """Project settings the user approved on this machine (`tether.config.Approvals`)."""
        return self.home / "approvals.json"

    @property
    def project_config(self) -> Path:
        return self.tether_dir / "config.toml"


def resolve(start: Path, home: Path | None = None, *, require_project: bool = False) -> Paths:
    root = find_project_root(start)
    if root is None and require_project:
        raise NoProjectError(
            f"no .tether/ found from {start}: run `tether init` at the repository root first"
        )
    return Paths(root=root, home=home or user_home())


def init_project(start: Path, home: Path | None = None) -> tuple[Paths, bool]:
    """Create `.tether/` at the git root (or `start` outside git). Returns the paths and whether it was new."""
    root = find_git_root(start) or start.resolve()
    tether_dir = root / TETHER_DIR
    created = not (tether_dir / "memories").is_dir()
    (tether_dir / "memories").mkdir(parents=True, exist_ok=True)
    (tether_dir / "logs").mkdir(exist_ok=True)
    gitignore = tether_dir / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(_GITIGNORE, encoding="utf-8")
    config = tether_dir / "config.toml"
    if not config.exists():
        config.write_text(
            "# tether configuration: `tether config --list` shows every key.\n", encoding="utf-8"
        )
    return Paths(root=root, home=home or user_home()), created
