"""Who a row in the team database belongs to: a project id and a user id (issue 13, multi-tenancy).

Several projects share one database, and a team member's user memory is theirs alone. Every row carries
`(project, owner)`:

| scope | project | owner |
|---|---|---|
| project | the project id | '' |
| user | '' | the user id |
| session | the project id ('' outside one) | the user id |

A workspace sees the rows whose project is its own or '' and whose owner is '' or its user.

**The project id** is `git:` and the repository's first commit (the oldest parentless commit reachable
from HEAD). Every clone computes the same id with nothing to coordinate, commit or keep in step, and it
survives a move to another host or a change of remote URL (ssh or https, a renamed organisation), which
the remote does not. It is taken from git, not from a committed file, because a clone is untrusted input
(DESIGN §8): a committed id could name another project's tenant and read its memories into this one.
A fork shares the id, which in one team database is what a fork is: the same project. A shallow clone
cannot see its first commit and is refused with a message rather than given a second id.

**The user id** is a random id made once in `$TETHER_HOME/user-id`: the same person on one machine in
every project, a different one for every `$TETHER_HOME` (which is how tests make two users).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tether.errors import ConfigError, NoProjectError

USER_ID_FILE = "user-id"


@dataclass(frozen=True)
class Tenant:
    """The project (None: user memory only, outside a project) and the user a workspace acts for."""

    project: str | None
    user: str

    def key(self, scope: str) -> tuple[str, str]:
        """`(project, owner)` of a memory of `scope` written by this workspace."""
        if scope == "user":
            return "", self.user
        if scope == "session":
            return self.project or "", self.user
        if self.project is None:
            raise NoProjectError("project memory needs a project: run `tether init` in the repository")
        return self.project, ""

    @property
    def projects(self) -> list[str]:
        return ["", self.project] if self.project else [""]

    @property
    def owners(self) -> list[str]:
        return ["", self.user]

    @property
    def default(self) -> tuple[str, str]:
        """Where events about an unknown memory (already removed, say) are kept."""
        return (self.project, "") if self.project else ("", self.user)


def user_id(home: Path) -> str:
    """This user's id, made on first use. Two processes making it at once agree: the first link wins."""
    path = home / USER_ID_FILE
    try:
        return _read_id(path)
    except FileNotFoundError:
        pass
    home.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".user-id.", dir=home)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_hex(16) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process made it first: theirs is the id
            os.link(tmp, path)
    finally:
        os.unlink(tmp)
    return _read_id(path)


def _read_id(path: Path) -> str:
    value = path.read_text(encoding="utf-8").strip()
    if len(value) < 16 or not all(c in "0123456789abcdef" for c in value):
        raise ConfigError(f"{path} does not hold a user id: delete it and tether makes a new one")
    return value


def project_id(root: Path) -> str:
    """`git:<first commit>` of the repository at `root` (see the module's docstring)."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"could not run git in {root} ({exc}): the team database needs git") from None
        if done.returncode != 0:
            raise ConfigError(
                f"the team database keys a project by its repository's first commit, and `git "
                f"{' '.join(args)}` failed in {root} ({done.stderr.strip() or done.returncode}): commit once"
                " (or unset TETHER_DATABASE_URL to use the local index)"
            )
        return done.stdout.strip()

    if git("rev-parse", "--is-shallow-repository") == "true":
        raise ConfigError(
            f"{root} is a shallow clone: its first commit is not here, so its project id cannot be known; "
            "run `git fetch --unshallow` (or unset TETHER_DATABASE_URL to use the local index)"
        )
    roots = sorted(
        (int(stamp), sha)
        for stamp, sha in (
            line.split() for line in git("log", "--max-parents=0", "--format=%ct %H", "HEAD").splitlines()
        )
    )
    return f"git:{roots[0][1]}"
