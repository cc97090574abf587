"""What `tether rules adopt` trades: characters the agent loads vs recall of the relevant rules (dev window).

    python benchmarks/quality/adopt_tradeoff.py            # every repository, dev window, prompt+files

Per dev task with a relevant rule, on the product's own project at C1 (as `run.py` makes it):

- native: the agent loads every rule file whose directory holds a touched file (`native-scope`, what
  Claude Code does with CLAUDE.md files and Codex with AGENTS.md); a relevant rule is "delivered" when its
  file is among them;
- adopt: the agent loads no rule file; tether injects the core at session start (`intake.adopt.choose_core`,
  counted once per task, i.e. one session per task, the worst case for the core) and its recall block
  for the task (what `run.py` counts as tether's tokens). A relevant rule is delivered when it is in the
  core or in tether's top 3;
- recall only: the same without the core.

Characters are the injected text (summaries with their line prefix and the block's header and footer for
tether; whole files natively). README "Adopting rule files" has the result.
"""

from __future__ import annotations

import sys
from statistics import mean

from corpus import REPOS, mirror_root
from evaluate import CHARS_PER_TOKEN, TOP_K, evaluate, load_labels, native_files
from product import attach
from run import _corpus
from tether_retriever import tether

from tether.intake import adopt
from tether.recall.block import FOOTER


def main() -> int:
    root = mirror_root(None)
    rows = []
    pooled: dict[str, list[float]] = {
        k: [] for k in ("native_c", "adopt_c", "recall_c", "native_r", "adopt_r", "recall_r")
    }
    for spec in REPOS:
        corpus = _corpus(spec.name, root, False)
        if corpus is None:
            return 1
        project = attach(corpus)
        labels = load_labels(corpus, "dev")
        core_memories = adopt.choose_core(project.ws)
        core = {project.by_memory[m.id] for m in core_memories if m.id in project.by_memory}
        core_lines = adopt.core_lines_for(core_memories)
        core_chars = (
            len(adopt.CORE_HEADER) + sum(len(line) + 3 for line in core_lines) + len(FOOTER) + 1
            if core_lines
            else 0
        )
        (run,) = evaluate(corpus, tether(), "dev", ("prompt+files",))
        docs = {d.id: d for d in corpus.docs}
        stats: dict[str, list[float]] = {k: [] for k in pooled}
        for commit, ranked, tokens, native_tokens in zip(
            run.commits, run.ranked, run.tokens, run.native_tokens, strict=True
        ):
            relevant = labels.get(commit, set())
            if not relevant:
                continue
            task = next(t for t in corpus.tasks if t.commit == commit)
            loaded = set(native_files(corpus, task.files))
            top = set(ranked[:TOP_K])
            stats["native_c"].append(native_tokens * CHARS_PER_TOKEN)
            stats["recall_c"].append(tokens * CHARS_PER_TOKEN)
            stats["adopt_c"].append(tokens * CHARS_PER_TOKEN + core_chars)
            stats["native_r"].append(
                sum(docs[r].path in loaded for r in relevant if r in docs) / len(relevant)
            )
            stats["recall_r"].append(len(top & relevant) / len(relevant))
            stats["adopt_r"].append(len((top | core) & relevant) / len(relevant))
        for k, v in stats.items():
            pooled[k].extend(v)
        rows.append((spec.name, len(stats["native_c"]), len(core_memories), core_chars, stats))
    print(
        "| repo | tasks | core rules | core chars | native chars/task | adopt chars/task | native Recall | adopt Recall@3+core | recall only Recall@3 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, count, chars, s in [*rows, ("all", len(pooled["native_c"]), 0, 0, pooled)]:
        core_cells = f"{count} | {chars}" if name != "all" else "— | —"
        print(
            f"| {name} | {n} | {core_cells} | {mean(s['native_c']):.0f} | {mean(s['adopt_c']):.0f} | "
            f"{mean(s['native_r']):.3f} | {mean(s['adopt_r']):.3f} | {mean(s['recall_r']):.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
