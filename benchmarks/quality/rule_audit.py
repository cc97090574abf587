"""What `tether rules sync` makes of the corpus's rule files: summary defects, and the rule-kind classifier.

    python benchmarks/quality/rule_audit.py                 # defect counts per repository at C1
    python benchmarks/quality/rule_audit.py --list cut      # the summaries with one defect, to read
    python benchmarks/quality/rule_audit.py --categories    # the classifier against labels/categories.json
    python benchmarks/quality/rule_audit.py --sample 160    # draw a new sample to label (prints no category)

Defects counted, each on the summary the product would inject (README "Rule import" has the results):

- cut: the summary stops before the end of its rule's first sentence (a hard-wrapped line, an ellipsis);
- short: four words or fewer;
- link: nothing but links or URLs;
- table: a table row (`| Group | File | Scope |`);
- tree: a directory tree or a bare directory name;
- colon: a lead-in ending in ":" ("Run from the repo root:").

The rule files are read from the mirrors at each repository's C1, as `build.py` reads them (symlinks and
import-only CLAUDE.md files left out). Rendering goes through the product (`product.render_file`).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from corpus import HERE, REPOS, git, git_bytes, git_dir, mirror_root
from product import is_rule_file, render_file

DEFECTS = ("cut", "short", "link", "table", "tree", "colon")
CATEGORY_LABELS = HERE / "labels" / "categories.json"
CATEGORIES = ("pref", "decision", "gotcha", "context")

_IMPORT_ONLY = re.compile(r"\s*(@\S+\s*)+")
_LINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)|<?https?://\S+>?|@[\w./~-]+")
_SENTENCE_END = re.compile(r"[.!?][)\"'*_`\]]*$")
_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d{1,9}[.)]\s|```|~~~|#|\|)")
_WORD = re.compile(r"[^\W_]+")
_LINK_TARGET = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def rule_files(spec_name: str, mirrors: Path) -> list[tuple[str, str]]:
    """(path, text) of every rule file of one corpus repository at C1."""
    spec = next(s for s in REPOS if s.name == spec_name)
    gdir = git_dir(spec, mirrors)
    out = []
    for rec in git(gdir, "ls-tree", "-r", "-z", spec.c1).split("\0"):
        if not rec:
            continue
        meta, path = rec.split("\t", 1)
        if not is_rule_file(path) or meta.split()[0] == "120000":
            continue
        try:
            text = git_bytes(gdir, "show", f"{spec.c1}:{path}").decode("utf-8-sig")
        except UnicodeDecodeError:
            continue
        if _IMPORT_ONLY.fullmatch(text):
            continue
        out.append((path, text))
    return sorted(out)


def first_paragraph(text: str) -> str:
    """The first paragraph of a rule's markdown, one line, list marker dropped (what a summary starts)."""
    lines: list[str] = []
    for raw in text.splitlines():
        if not raw.strip():
            if lines:
                break
            continue
        if lines and _BLOCK_START.match(raw):
            break
        if not lines and raw.lstrip().startswith(("```", "~~~")):
            return ""
        lines.append(_MARKER.sub("", raw).strip())
    return " ".join(lines)


def defects(summary: str, source: str) -> set[str]:
    """Which defects a summary has; `source` is the markdown of the rule it was made from."""
    found = set()
    text = summary.strip()
    words = _WORD.findall(_LINK.sub(" ", text))
    body = text.removesuffix("…").rstrip()
    # Compared in words: the source paragraph has markup (links, emphasis) that a summary drops.
    para_words = _WORD.findall(_LINK_TARGET.sub(r"\1", first_paragraph(source)))
    if text.endswith("…") or (
        not _SENTENCE_END.search(body)
        and not body.endswith(":")
        and len(para_words) > len(_WORD.findall(body))
    ):
        found.add("cut")
    if len(_WORD.findall(text)) <= 4:
        found.add("short")
    if _LINK.search(text) and not [w for w in words if w.strip("`'’-")]:
        found.add("link")
    if text.startswith("|"):
        found.add("table")
    if re.search(r"[├└│]", text) or re.fullmatch(r"`?[\w.@-]+(/[\w.@-]+)*/`?", text):
        found.add("tree")
    if text.endswith(":"):
        found.add("colon")
    return found


def audit(mirrors: Path, show: str | None) -> None:
    totals: Counter[str] = Counter()
    print("| repo | rule files | rules (memories) | units dropped | " + " | ".join(DEFECTS) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(DEFECTS))
    with tempfile.TemporaryDirectory() as tmp:
        for spec in REPOS:
            counts: Counter[str] = Counter()
            files = rule_files(spec.name, mirrors)
            for path, text in files:
                rendered, dropped = render_file(path, text, Path(tmp))
                counts["memories"] += len(rendered)
                counts["dropped"] += dropped
                for item in rendered:
                    found = defects(item.summary, item.unit.text)
                    counts.update(found)
                    if show in found:
                        print(f"  {spec.name}:{path}:{item.unit.line}: {item.summary}", file=sys.stderr)
            totals.update(counts)
            totals["files"] += len(files)
            cells = " | ".join(str(counts[d]) for d in DEFECTS)
            print(f"| {spec.name} | {len(files)} | {counts['memories']} | {counts['dropped']} | {cells} |")
    cells = " | ".join(str(totals[d]) for d in DEFECTS)
    print(f"| all | {totals['files']} | {totals['memories']} | {totals['dropped']} | {cells} |")


def sample(mirrors: Path, size: int, seed: int) -> None:
    """Draw `size` rules at random (seeded; the same number from each repository, so that langfuse's
    thousand skill-file rules do not make the sample theirs) and print them to label, with no category."""
    rng = random.Random(seed)
    chosen = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in REPOS:
            pool = []
            for path, text in rule_files(spec.name, mirrors):
                rendered, _ = render_file(path, text, Path(tmp))
                pool += [(spec.name, path, item) for item in rendered]
            chosen += rng.sample(pool, size // len(REPOS))
    rng.shuffle(chosen)
    items = []
    for repo, path, item in chosen:
        items.append(
            {"repo": repo, "path": path, "line": item.unit.line, "summary": item.summary, "label": None}
        )
        print(f"### {repo} {path}:{item.unit.line}  ({item.unit.heading})\n{item.unit.text}\n")
    print(json.dumps({"seed": seed, "items": items}, indent=1), file=sys.stderr)


def categories(mirrors: Path) -> None:
    """Per-class precision and recall of the product's category against the hand labels."""
    data = json.loads(CATEGORY_LABELS.read_text())
    wanted = {(i["repo"], i["path"], i["line"]): i for i in data["items"]}
    found: dict[tuple[str, str, int], str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in REPOS:
            for path, text in rule_files(spec.name, mirrors):
                rendered, _ = render_file(path, text, Path(tmp))
                for item in rendered:
                    key = (spec.name, path, item.unit.line)
                    if key in wanted:
                        found[key] = item.category
    missing = [k for k in wanted if k not in found]
    if missing:
        raise SystemExit(f"{len(missing)} labelled rules no longer render at their line, e.g. {missing[0]}")
    for split in ("dev", "test", "all"):
        keys = [k for k, i in wanted.items() if split == "all" or i["split"] == split]
        pairs = [(wanted[k]["label"], found[k]) for k in keys]
        right = sum(a == b for a, b in pairs)
        print(f"\n{split}: {len(pairs)} rules, accuracy {right / len(pairs):.2f}")
        print("| class | labelled | predicted | correct | precision | recall |")
        print("|---|---:|---:|---:|---:|---:|")
        for name in CATEGORIES:
            labelled = sum(a == name for a, _ in pairs)
            predicted = sum(b == name for _, b in pairs)
            correct = sum(a == b == name for a, b in pairs)
            precision = f"{correct / predicted:.2f}" if predicted else "—"
            recall = f"{correct / labelled:.2f}" if labelled else "—"
            print(f"| {name} | {labelled} | {predicted} | {correct} | {precision} | {recall} |")
        confusion = Counter(f"{a}->{b}" for a, b in pairs if a != b)
        print("errors: " + ", ".join(f"{k} {v}" for k, v in confusion.most_common()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", help="directory holding the git mirrors")
    parser.add_argument("--list", choices=DEFECTS, help="print the summaries with this defect (stderr)")
    parser.add_argument("--categories", action="store_true", help="score the classifier on the labels")
    parser.add_argument("--sample", type=int, help="draw this many rules to label")
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    mirrors = mirror_root(args.mirrors)
    if args.sample:
        sample(mirrors, args.sample, args.seed)
    elif args.categories:
        categories(mirrors)
    else:
        audit(mirrors, args.list)


if __name__ == "__main__":
    main()
