"""Hand-judged labels beside the mechanical ones: the blind judging pool, and scoring against the verdicts.

    python benchmarks/quality/judged.py pool        # sample dev tasks, pool the systems' top 3, write sheets
    python benchmarks/quality/judged.py pool --round3  # the judged tasks again: new top-5 pairs, sheets_r3/
    python benchmarks/quality/judged.py freeze      # data/judging/verdicts.json -> labels/judged/judgments.json
    python benchmarks/quality/run.py --judged       # Recall@3 on the judged labels, and the agreement

The pool (dev window only): for a seeded sample of dev tasks per repository, the union of every system's
top 3 in prompt+files mode (all baselines and tether), two random rules in scope of a touched file, and the
task's mechanical positives (so the agreement can be measured both ways), shuffled. The sheets
(`data/judging/sheets/*.md`, git-ignored: they hold repository text) show the task (commit message and its
diff) and each rule's text, and nothing else: not which system proposed a rule, nor its label. Those go to
`data/judging/key.json`, which the judge does not open until every verdict is in. `judging.md` in
`labels/judged/` has the protocol. Only commit ids, rule ids, verdicts and the judge's one-line reasons are
committed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import DATA_DIR, LABELS_DIR, REPOS, Corpus, docs_of, git, load_corpus
from evaluate import (
    BASELINES,
    Labels,
    Run,
    diff_cell,
    evaluate,
    load_labels,
    mean,
    metric,
    paired,
    score,
    strongest,
    window_tasks,
)

JUDGED_DIR = LABELS_DIR / "judged"
JUDGMENTS = JUDGED_DIR / "judgments.json"
WORK = DATA_DIR / "judging"
VERDICTS = ("needed", "helpful", "not relevant")
POOL_MODE = "prompt+files"
RANDOM_IN_SCOPE = 2
DIFF_LINES_PER_FILE = 60
DIFF_LINES = 300
DIFF_EXCLUDES = (":(exclude)*.lock", ":(exclude)*lock.json", ":(exclude)*lock.yaml", ":(exclude)*.snap")
DIFF_EXCLUDES += (":(exclude)**/cassettes/**",)


def sample_tasks(corpus: Corpus, labels: Labels, with_positive: int, without: int, seed: int) -> list[str]:
    """Seeded sample of dev tasks: some with a mechanical positive, some without, in commit order."""
    rng = random.Random(f"{seed}:{corpus.repo}")
    dev = window_tasks(corpus, "dev")
    pos = [c for c in dev if labels.get(c)]
    neg = [c for c in dev if not labels.get(c)]
    chosen = set(rng.sample(pos, min(with_positive, len(pos))) + rng.sample(neg, min(without, len(neg))))
    return [c for c in dev if c in chosen]


def build_pool(
    corpus: Corpus,
    commits: Sequence[str],
    runs: Sequence[Run],
    labels: Labels,
    seed: int,
    depth: int = 3,
    random_in_scope: int = RANDOM_IN_SCOPE,
) -> dict[str, dict[str, dict[str, object]]]:
    """commit -> doc id -> why it is in the pool (systems with the rank, random in-scope, mechanical label)."""
    docs = {d.id: d for d in docs_of(corpus)}
    task_files = {t.commit: t.files for t in corpus.tasks}
    pool: dict[str, dict[str, dict[str, object]]] = {}
    for commit in commits:
        entry: dict[str, dict[str, object]] = {}
        for run in runs:
            if run.mode != POOL_MODE or commit not in run.commits:
                continue
            for rank, doc_id in enumerate(run.ranked[run.commits.index(commit)][:depth], 1):
                system = run.system if rank <= 3 else f"{run.system}@{rank}"
                entry.setdefault(doc_id, {"systems": []})["systems"].append(system)  # type: ignore[union-attr]
        rng = random.Random(f"{seed}:{commit}")
        files = task_files[commit]
        in_scope = [d for d in docs if d not in entry and any(docs[d].covers(f) for f in files)]
        for doc_id in rng.sample(in_scope, min(random_in_scope, len(in_scope))):
            entry.setdefault(doc_id, {"systems": []})["random_in_scope"] = True
        for doc_id in labels.get(commit, set()):
            if doc_id in docs:
                entry.setdefault(doc_id, {"systems": []})["mechanical"] = True
        for doc_id, why in entry.items():
            why["mechanical"] = doc_id in labels.get(commit, set())
        pool[commit] = entry
    return pool


def diff_text(corpus: Corpus, commit: str) -> str:
    """The commit's diff, a bounded number of lines per file and in all (recorded output left out)."""
    gdir = Path(corpus.git_dir)
    stat = git(gdir, "show", "--stat=120", "--format=", commit).rstrip()
    # Lock files, snapshots and VCR cassettes are recorded output, not the change (as for the labels).
    patch = git(gdir, "show", "--format=", "--no-color", "-U2", commit, "--", ".", *DIFF_EXCLUDES)
    out: list[str] = []
    per_file = 0
    skipped = 0
    for line in patch.splitlines():
        if line.startswith("diff --git"):
            if skipped:
                out.append(f"[... {skipped} more lines of this file]")
            per_file, skipped = 0, 0
        if per_file >= DIFF_LINES_PER_FILE or len(out) >= DIFF_LINES:
            skipped += 1
            continue
        out.append(line)
        per_file += 1
    if skipped:
        out.append(f"[... {skipped} more lines]")
    return stat + "\n\n" + "\n".join(out)


def drop_judged(
    pool: dict[str, dict[str, dict[str, object]]], rows: Sequence[dict[str, object]]
) -> dict[str, dict[str, dict[str, object]]]:
    """The pool without the pairs (commit, rule id) already judged, and without tasks left empty."""
    judged = {(str(r["commit"]), str(r["rule"])) for r in rows}
    out = {}
    for commit, entry in pool.items():
        kept = {d: why for d, why in entry.items() if (commit, d) not in judged}
        if kept:
            out[commit] = kept
    return out


def write_sheets(
    corpora: Sequence[Corpus],
    pools: dict[str, dict[str, dict[str, dict[str, object]]]],
    seed: int,
    tag: str = "",
) -> int:
    """One markdown sheet per task; a verdict template; the key. Returns the number of pairs.

    `tag` names a later round's files (`sheets{tag}/`, `key{tag}.json`, `verdicts{tag}.json`) so that the
    earlier rounds' sheets and key stay as they were."""
    sheets = WORK / f"sheets{tag}"
    sheets.mkdir(parents=True, exist_ok=True)
    template: list[dict[str, str]] = []
    key: dict[str, object] = {}
    number = 0
    for corpus in corpora:
        docs = {d.id: d for d in docs_of(corpus)}
        messages = {}
        for commit in pools[corpus.repo]:
            messages[commit] = git(Path(corpus.git_dir), "show", "-s", "--format=%B", commit).strip()
        for commit, entry in pools[corpus.repo].items():
            number += 1
            order = sorted(entry)
            random.Random(f"{seed}:shuffle:{commit}").shuffle(order)
            lines = [
                f"# Task {number:02d}: {corpus.repo} {commit}",
                "",
                "## Commit message",
                "",
                "```text",
                messages[commit],
                "```",
                "",
                "## Diff",
                "",
                "```diff",
                diff_text(corpus, commit),
                "```",
                "",
                "## Rules to judge (needed / helpful / not relevant)",
                "",
            ]
            for k, doc_id in enumerate(order, 1):
                doc = docs[doc_id]
                lines += [f"### R{k} `{doc_id}`", "", doc.summary, "", doc.details, ""]
                template.append(
                    {"repo": corpus.repo, "commit": commit, "rule": doc_id, "verdict": "", "reason": ""}
                )
            (sheets / f"{number:02d}-{corpus.repo}-{commit[:8]}.md").write_text(
                "\n".join(lines), encoding="utf-8"
            )
            key[commit] = entry
    (WORK / f"key{tag}.json").write_text(json.dumps(key, indent=1), encoding="utf-8")
    verdicts = WORK / f"verdicts{tag}.json"
    if not verdicts.exists():
        verdicts.write_text(json.dumps(template, indent=1), encoding="utf-8")
    return len(template)


def located(
    row: dict[str, object],
    previous: dict[tuple[str, str], dict[str, object]],
    where: dict[str, tuple[str, int]],
) -> tuple[str, int]:
    """Where a verdict's rule lives: as recorded when the pair was judged before (an earlier round's verdict
    stays as it was frozen, even after rule rendering changed its id or moved it), else from the rules now."""
    before = previous.get((str(row["commit"]), str(row["rule"])))
    if before is not None:
        return str(before["path"]), int(before["line"])  # type: ignore[call-overload]
    if row["rule"] not in where:
        raise SystemExit(f"{str(row['commit'])[:10]} {row['rule']}: no such rule in the current corpus")
    return where[str(row["rule"])]


def freeze(corpora: Sequence[Corpus]) -> Path:
    """Check the verdicts and write the committed judgments (labels only: ids, verdicts, reasons)."""
    rows = json.loads((WORK / "verdicts.json").read_text(encoding="utf-8"))
    where = {d.id: (d.path, d.line) for c in corpora for d in docs_of(c)}
    out = []
    previous = {(str(r["commit"]), str(r["rule"])): r for r in load_judgments()} if JUDGMENTS.exists() else {}
    for row in rows:
        if row["verdict"] not in VERDICTS:
            raise SystemExit(
                f"{row['commit'][:10]} {row['rule']}: verdict {row['verdict']!r} not in {VERDICTS}"
            )
        if not row["reason"].strip():
            raise SystemExit(f"{row['commit'][:10]} {row['rule']}: no reason given")
        path, line = located(row, previous, where)
        out.append(row | {"path": path, "line": line})
    out.sort(key=lambda r: (r["repo"], r["commit"], r["path"], r["line"]))
    JUDGED_DIR.mkdir(parents=True, exist_ok=True)
    body = ",\n  ".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in out)
    JUDGMENTS.write_text('{\n "judgments": [\n  ' + body + "\n ]\n}\n", encoding="utf-8")
    return JUDGMENTS


# --- scoring ------------------------------------------------------------------------------------------


def load_judgments(path: Path = JUDGMENTS) -> list[dict[str, object]]:
    if not path.exists():
        raise SystemExit(f"no judged labels at {path}: see benchmarks/quality/labels/judged/judging.md")
    rows: list[dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))["judgments"]
    return rows


def judged_labels(rows: Sequence[dict[str, object]], verdicts: Sequence[str]) -> Labels:
    out: Labels = {}
    for row in rows:
        entry = out.setdefault(str(row["commit"]), set())
        if row["verdict"] in verdicts:
            entry.add(str(row["rule"]))
    return out


def agreement(
    rows: Sequence[dict[str, object]], mechanical: Labels, verdicts: Sequence[str]
) -> tuple[int, int, int]:
    """(mechanical and judged, mechanical, judged) counts over the judged pairs."""
    both = mech = judged = 0
    for row in rows:
        is_mech = str(row["rule"]) in mechanical.get(str(row["commit"]), set())
        is_judged = row["verdict"] in verdicts
        both += is_mech and is_judged
        mech += is_mech
        judged += is_judged
    return both, mech, judged


def judged_report(
    runs: Sequence[Run],
    mechanical: Labels,
    corpora: Sequence[Corpus],
    baselines: Sequence[str],
    systems: Sequence[str],
) -> str:
    rows_j = load_judgments()
    repos = {c.repo for c in corpora}
    rows_j = [r for r in rows_j if r["repo"] in repos]
    commits = {str(r["commit"]) for r in rows_j}
    needed = judged_labels(rows_j, ("needed",))
    useful = judged_labels(rows_j, ("needed", "helpful"))
    mech = {c: mechanical.get(c, set()) for c in commits}
    judged_pairs = {(str(r["commit"]), str(r["rule"])) for r in rows_j}
    scope = "all" if len(corpora) > 1 else corpora[0].repo
    counts = {v: sum(1 for r in rows_j if r["verdict"] == v) for v in VERDICTS}
    out = [
        f"Hand-judged labels: {len(rows_j)} task-rule pairs over {len(commits)} dev tasks of "
        f"{len({r['repo'] for r in rows_j})} repositories ({', '.join(f'{v}: {n}' for v, n in counts.items())}). "
        f"Recall@3 in {POOL_MODE} mode over the judged tasks that have at least one such rule; a top-3 rule "
        "that was never judged counts as not relevant (coverage: share of top-3 items judged):\n",
        "| system | n mech | Recall@3 mechanical | n needed | Recall@3 judged-needed | n needed+helpful "
        "| Recall@3 needed+helpful | top-3 coverage |",
        "|---|---:|---|---:|---|---:|---|---:|",
    ]
    subs: list[Run] = []
    for run in runs:
        if run.repo != scope or run.mode != POOL_MODE or run.system not in (*baselines, *systems):
            continue
        sub = Run(run.repo, run.system, run.mode, cost=run.cost)
        subs.append(sub)
        for commit, ranked in zip(run.commits, run.ranked, strict=True):
            if commit in commits:
                sub.commits.append(commit)
                sub.ranked.append(ranked)
        top = [(c, d) for c, ranked in zip(sub.commits, sub.ranked, strict=True) for d in ranked[:3]]
        coverage = sum(1 for p in top if p in judged_pairs) / len(top) if top else float("nan")
        m, n, u = score(sub, mech), score(sub, needed), score(sub, useful)
        out.append(
            f"| {run.system} | {len(m.recall)} | {metric(m.recall)} | {len(n.recall)} | {metric(n.recall)} | "
            f"{len(u.recall)} | {metric(u.recall)} | {coverage:.0%} |"
        )
    out += ["", "Against the strongest baseline on each label set (judged tasks, prompt+files, paired):", ""]
    out += ["| labels | strongest baseline | its Recall@3 | system | system's Recall@3 | difference |"]
    out += ["|---|---|---|---|---|---|"]
    for name, labels in (("mechanical", mech), ("judged-needed", needed), ("needed+helpful", useful)):
        results = [score(r, labels) for r in subs]
        best = strongest(results, baselines, scope, POOL_MODE)
        for mine in (r for r in results if r.system in systems):
            if best is None:
                continue
            out.append(
                f"| {name} | {best.system} | {mean(best.recall):.3f} | {mine.system} | {mean(mine.recall):.3f} | "
                f"{diff_cell(paired(mine, best))} |"
            )
    out += [
        "",
        "Agreement of the mechanical labels with the judgments (over the judged pairs):",
        "",
        "| judged relevant means | mechanical positives | judged relevant | both | precision of mechanical | recall of mechanical |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, verdicts in (("needed", ("needed",)), ("needed or helpful", ("needed", "helpful"))):
        both, n_mech, n_judged = agreement(rows_j, mech, verdicts)
        precision = both / n_mech if n_mech else float("nan")
        recall = both / n_judged if n_judged else float("nan")
        out.append(f"| {name} | {n_mech} | {n_judged} | {both} | {precision:.2f} | {recall:.2f} |")
    per_task = [len(needed.get(c, ())) for c in commits]
    out.append(
        f"\nJudged-needed rules per judged task: mean {mean(per_task):.2f}, tasks with none: "
        f"{sum(1 for n in per_task if not n)} of {len(per_task)}."
    )
    return "\n".join(out)


ROUND3_SYSTEMS = (
    "tether_retriever:tether",
    "tether_retriever:text_max_014",
    "tether_retriever:text_max_042",
    "tether_retriever:dir_hit_02",
)
ROUND3_DEPTH = 5


def pool_round3(corpora: Sequence[Corpus], seed: int) -> int:
    """Round 3: the same judged tasks, every baseline's and ROUND3_SYSTEMS' top 5 and the mechanical positives
    (no random draw), less the pairs already judged."""
    import importlib

    rows = load_judgments()
    makers = list(BASELINES.values())
    for spec in ROUND3_SYSTEMS:
        module, _, name = spec.partition(":")
        makers.append(getattr(importlib.import_module(module), name))
    pools = {}
    for corpus in corpora:
        judged_commits = {str(r["commit"]) for r in rows if r["repo"] == corpus.repo}
        commits = [t.commit for t in corpus.tasks if t.commit in judged_commits]
        labels = load_labels(corpus, "dev")
        runs: list[Run] = []
        for make in makers:
            runs.extend(evaluate(corpus, make(), "dev", (POOL_MODE,), only=set(commits)))
        pool = build_pool(corpus, commits, runs, labels, seed, depth=ROUND3_DEPTH, random_in_scope=0)
        pools[corpus.repo] = drop_judged(pool, rows)
        sizes = [len(p) for p in pools[corpus.repo].values()]
        print(f"{corpus.repo}: {len(commits)} tasks, new pairs per task {sizes}")  # counts only: stay blind
    print(f"{write_sheets(corpora, pools, seed, tag='_r3')} pairs; sheets in {WORK / 'sheets_r3'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=("pool", "freeze"))
    parser.add_argument("--repo", action="append")
    parser.add_argument(
        "--with-positive", type=int, default=2, help="sampled tasks with a mechanical positive"
    )
    parser.add_argument("--without", type=int, default=1, help="sampled tasks without one")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument(
        "--round3",
        action="store_true",
        help="pool the tasks already judged (judgments.json): ranks 1-5 of the baselines and ROUND3_SYSTEMS, "
        "and the mechanical positives, without the pairs already judged (sheets_r3/, key_r3.json)",
    )
    args = parser.parse_args(argv)
    from product import attach

    names = args.repo or [spec.name for spec in REPOS]
    corpora = [load_corpus(n) for n in names]
    for corpus in corpora:
        attach(corpus)
    if args.action == "freeze":
        print(f"wrote {freeze(corpora)}")
        return 0
    from tether_retriever import tether

    if args.round3:
        return pool_round3(corpora, args.seed)
    pools = {}
    for corpus in corpora:
        labels = load_labels(corpus, "dev")
        commits = sample_tasks(corpus, labels, args.with_positive, args.without, args.seed)
        runs: list[Run] = []
        for make in [*BASELINES.values(), tether]:
            runs.extend(evaluate(corpus, make(), "dev", (POOL_MODE,), only=set(commits)))
        pools[corpus.repo] = build_pool(corpus, commits, runs, labels, args.seed)
        sizes = [len(p) for p in pools[corpus.repo].values()]
        print(
            f"{corpus.repo}: {len(commits)} tasks, pool sizes {sizes}"
        )  # counts only: the judge stays blind
    print(f"{write_sheets(corpora, pools, args.seed)} pairs; sheets in {WORK / 'sheets'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
