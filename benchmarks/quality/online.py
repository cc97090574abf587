"""The online replay: a repository's dev tasks in time order through one tether project, with feedback.

Static runs score every task on a fresh index. In use, one project lives across tasks and its feedback loop
acts: a memory shown 4+ times and never used loses score (`scoring.feedback`), one used gains a little,
recency is anchored on the last use, and session start archives memories shown 6+ times over 45+ days
without use (`lifecycle.archive_pass`). The replay measures what that loop does to Recall@3.

Per repository and mode, four arms, each on its own fresh project (built like `product.attach`'s):

- `off`: nothing recorded (`record=False`, no acks): the static ranking, task after task;
- `shown`: every surfacing recorded (`record=True`, a session per task), nobody acts on anything, as with
  an agent that never calls `memory_get`. Since session 13 what counts as ignored scales with the project's
  pull rate (`scoring.ignored_after`), which is 0 here, so this arm ranks as `off` does, by design: before,
  the fixed thresholds cost Recall@3 with files -0.045 [-0.09, -0.01] (the memories shown most were the
  relevant ones);
- `feedback`: surfacings recorded, and after each task the memories that were shown *and* are relevant
  (mechanical label) are acknowledged as an agent's `memory_get` would (`Workspace.ack`, via memory_get);
- `some`: as `feedback`, but only every third such memory is acknowledged: an agent that pulls now and then
  (with fixed thresholds, -0.023 with files: the relevant memories it did not pull were penalized and archived).

Before each task the workspace clock moves to the commit's committer date (never backwards) and the
session-start archive pass runs. Recall is the shipped call (limit 3, 2,400 characters).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from corpus import Corpus, TaskView, commit_times
from evaluate import MODES, Result, Run, diff_cell, load_labels, metric, paired, pooled, score, window_tasks
from product import Project

ARMS = ("off", "shown", "feedback", "some")
WINDOW = "dev"


@dataclass
class Replay:
    run: Run
    surfaced: int = 0  # surfacing events recorded
    acks: int = 0
    archived: int = 0  # memories archived by the session-start pass over the replay
    penalized: int = 0  # memories under the ignored penalty at the end


def replay(corpus: Corpus, mode: str, arm: str, project: Project | None = None) -> Replay:
    """Replay the dev tasks of `corpus` in order through one project (a fresh one unless given)."""
    project = project or Project.build(corpus)
    labels = load_labels(corpus, WINDOW)
    commits = set(window_tasks(corpus, WINDOW))
    tasks = [t for t in corpus.tasks if t.commit in commits]
    times = commit_times(Path(corpus.git_dir), [t.commit for t in tasks]) if corpus.git_dir else {}
    out = Replay(Run(corpus.repo, f"tether online:{arm}", mode))
    record = arm != "off"
    relevant_shown = 0
    for task in tasks:
        when = times.get(task.commit)
        if when is not None:
            project.clock.now = max(project.clock.now, datetime.fromtimestamp(when, UTC))
        if record:
            out.archived += project.session_start()
        session = f"replay-{task.commit[:12]}"
        view = TaskView(task.query, task.files if mode == "prompt+files" else ())
        result = project.recall(view.query, view.files, record=record, session=session, turn=1)
        shown = result.ids[: project.limit]
        out.run.commits.append(task.commit)
        out.run.ranked.append(shown)
        out.surfaced += len(shown) if record else 0
        if arm in ("feedback", "some"):
            for doc_id in shown:
                if doc_id in labels.get(task.commit, set()):
                    relevant_shown += 1
                    if arm == "feedback" or relevant_shown % 3 == 1:
                        project.ack(doc_id, session, turn=1)
                        out.acks += 1
    out.penalized = project.penalized()
    return out


def online_report(corpora: Sequence[Corpus], modes: Sequence[str] = MODES) -> str:
    """Recall@3 of the four arms per repository and pooled, with the paired differences against `off`."""
    replays: list[Replay] = []
    labels: dict[str, set[str]] = {}
    for corpus in corpora:
        labels.update(load_labels(corpus, WINDOW))
        for mode in modes:
            for arm in ARMS:
                replays.append(replay(corpus, mode, arm))
    runs = [r.run for r in replays]
    if len(corpora) > 1:
        runs += pooled(runs)
    results = {(r.repo, r.system, r.mode): score(r, labels) for r in runs}
    rows = [
        "Online replay of the dev window (one project per repository and arm, tasks in commit order; "
        "Recall@3 over tasks with a relevant rule; differences paired against `off`):\n",
        "| repo | mode | n | off | shown (no acks) | feedback (acks) | some (a third acked) | shown - off "
        "| feedback - off | some - off | surfacings | acks (feedback / some) | archived | penalized at end |",
        "|---|---|---:|---|---|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    repos = list(dict.fromkeys(r.repo for r in runs))
    for repo in repos:
        for mode in modes:
            arm: dict[str, Result] = {a: results[(repo, f"tether online:{a}", mode)] for a in ARMS}
            stats = [r for r in replays if (repo in ("all", r.run.repo)) and r.run.mode == mode]
            rows.append(
                f"| {repo} | {mode} | {len(arm['off'].recall)} | {metric(arm['off'].recall)} | "
                f"{metric(arm['shown'].recall)} | {metric(arm['feedback'].recall)} | {metric(arm['some'].recall)} | "
                f"{diff_cell(paired(arm['shown'], arm['off']))} | {diff_cell(paired(arm['feedback'], arm['off']))} | "
                f"{diff_cell(paired(arm['some'], arm['off']))} | {_total(stats, 'feedback', 'surfaced')} | "
                f"{_total(stats, 'feedback', 'acks')} / {_total(stats, 'some', 'acks')} | "
                f"{_total(stats, 'shown', 'archived')} / {_total(stats, 'feedback', 'archived')} / "
                f"{_total(stats, 'some', 'archived')} | {_total(stats, 'shown', 'penalized')} / "
                f"{_total(stats, 'feedback', 'penalized')} / {_total(stats, 'some', 'penalized')} |"
            )
    rows.append(
        "\nsurfacings: the feedback arm's; archived and penalized: `shown` / `feedback` / `some` arms."
    )
    return "\n".join(rows)


def _total(replays: Sequence[Replay], arm: str, name: str) -> int:
    return sum(int(getattr(r, name)) for r in replays if r.run.system == f"tether online:{arm}")
