"""HEAD's last commits and the paths they touched, recorded with the repo map for the recent-change channel
(DESIGN §4.2): recall then finds a touched file's last commits in the index, with no `git rev-list` or
`git log` process (`tether.repo.recent`).

The window is what the channel asks git for: the non-merge commits of `HEAD ^B` (B the commit `horizon`
commits below HEAD in `git rev-list` order; all of HEAD's when the history is shorter), in `git log`'s
order, with each commit's paths as `--name-only --no-renames --relative` lists them (a rename: both paths).
A refresh records it for the HEAD it read up to when HEAD's last `horizon` commits are one chain (each
has one parent, the next; the last may be the root): HEAD ^B is then exactly that chain, in that order, and
git's history simplification (a pathspec's log skips a merged branch whose change the merge did not keep)
has no merge to act on, so the window lists for every path what the channel's own `git log` would. The
stream gives the chain as it reads history (a first build), or on top of the window recorded for the HEAD
it read from, which was such a chain too (a pull or commits on top: the new ones go above, the oldest drop
out). With a merge among HEAD's last `horizon` commits nothing is recorded: recall asks git, as before
(on this repository's own history, 3 files in 300 would have had other commits than git's log gives).

    recorder = WindowRecorder(1000)
    for commit in stream: recorder.add(commit)
    write = plan_window(tables.state(), head, recorder)
    write.apply(tables)            # inside the refresh's transaction
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from tether.repo.git import TETHER_DIR, Commit
from tether.store.base import RecentCommit, RepoMapStore

# HEAD's commits the window spans: `scoring.RECENT_HORIZON` (a recall asking for another horizon asks git).
WINDOW_HORIZON = 1000


def window_key(head: str, horizon: int) -> str:
    """What names a recorded window: the HEAD it is of and its horizon."""
    return f"{head}:{horizon}"


def recordable(path: str) -> bool:
    """Whether the window can answer for `path` (the repo map's stream leaves tether's own files out)."""
    return not path.startswith(TETHER_DIR)


class WindowRecorder:
    """The newest `horizon` commits of a stream read oldest first (merges included): a deque of the
    stream's own tuples, so a first build pays an append per commit."""

    def __init__(self, horizon: int = WINDOW_HORIZON) -> None:
        self.horizon = horizon
        self._last: deque[Commit] = deque(maxlen=horizon)

    def add(self, commit: Commit) -> None:
        self._last.append(commit)

    def chain(self, head: str, below: str | None) -> tuple[list[RecentCommit], bool] | None:
        """(HEAD's window newest first, whether it goes above the window recorded for `below`) when the
        streamed commits make it by themselves or on top of that one (see the module's docstring)."""
        last = list(reversed(self._last))
        if not last or last[0].sha != head:
            return None
        for i, commit in enumerate(last):
            if len(commit.parents) > 1:
                return None
            if i + 1 < len(last) and commit.parents != (last[i + 1].sha,):
                return None
        commits = [RecentCommit(c.sha, bool(c.parents), _paths(c)) for c in last]
        oldest = last[-1].parents
        if len(last) == self.horizon or not oldest:
            return commits, False  # the whole window, or the whole history
        if below is not None and oldest == (below,):
            return commits, True
        return None


def _paths(commit: Commit) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p for ch in commit.changes for p in (ch.path, ch.old) if p is not None))


@dataclass(frozen=True)
class WindowWrite:
    """The window to record for one HEAD: `commits` newest first, above the recorded ones or instead."""

    key: str | None  # None: record none
    commits: list[RecentCommit]
    add: bool
    chain: int | None  # the horizon of a window that is one chain of commits (the next may build on it)

    def apply(self, tables: RepoMapStore) -> None:
        tables.put_recent(self.key or "", self.commits, keep=self.chain, add=self.add)
        chain = "1" if self.chain is not None else None
        tables.set_state({"recent_window": self.key, "recent_chain": chain})


def plan_window(state: Mapping[str, str], head: str, recorder: WindowRecorder) -> WindowWrite | None:
    """What to record for `head` after a refresh streamed what `recorder` kept (`state`: the map's as the
    refresh found it). None when nothing is to be written: the window recorded is `head`'s already, or
    none is recorded and none can be."""
    key = window_key(head, recorder.horizon)
    recorded = state.get("recent_window")
    if recorded == key:
        return None
    below = None
    if recorded is not None and state.get("recent_chain") == "1":
        sha, _, horizon = recorded.partition(":")
        below = sha if horizon == str(recorder.horizon) else None
    chained = recorder.chain(head, below)
    if chained is None:
        # Not one chain: no window, and none of an older HEAD's either (what a first build here records).
        return None if recorded is None else WindowWrite(None, [], False, None)
    return WindowWrite(key, chained[0], chained[1], recorder.horizon)
