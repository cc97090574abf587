"""Search by meaning: paraphrased questions over a small project's memories, per embedder (issue 17 §3).

    .venv/bin/python benchmarks/quality/meaning.py [--embedder hashed --embedder static ...]

The Acolyte article's promise is that "how does tool execution work" finds "Tool execution uses runTool".
Each question below is asked the way a person would, sharing as few words with its memory as a real question
does (often none but a stem); the memory is the one a reader would call the answer. For each embedder the
script reports, over the questions:

- `hit@1`, `hit@3`, `MRR`: where the answer ranks by cosine alone, among all the memories;
- `search@1`, `search@3`: whether `tether search` (the product: full text and semantic fused, as shipped)
  returns the answer first, or in its first three; `strong@3`: in its first three and marked `strong`;
- `answer cos`: the median cosine of question and answer; `stray cos`: the median of the best cosine an
  off-topic question (one with no answer here) reaches. Their gap is what a confidence mark can rely on.

The memories and questions were written once, before any embedder was scored on them; none is tuned on.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tether.embed import Embedder
from tether.embed.providers import make_embedder
from tether.project import init_project
from tether.workspace import Workspace

# A coding agent's project (the article's Acolyte, roughly): what its memories say.
MEMORIES = (
    "Tool execution uses runTool",
    "Uploads are retried three times with exponential backoff before the job fails",
    "Staging listens on port 6443; production on 443 behind the load balancer",
    "Use pnpm, never npm, for installs: the lockfile is pnpm-lock.yaml",
    "The auth middleware checks the session cookie and refreshes it when it is older than an hour",
    "Database migrations live in db/migrations and run with `make migrate`; never edit an applied one",
    "Config is read from config.toml, then environment variables override it",
    "Logs go to stderr as JSON lines; never print to stdout in the server, it is the protocol channel",
    "The test suite needs Docker running for the Postgres fixtures",
    "Feature flags are evaluated in flags.ts through the evaluateFlag helper",
    "API responses are cached in Redis for five minutes, keyed by user and route",
    "Release: bump the version in pyproject.toml, tag vX.Y.Z, CI publishes to PyPI",
    "Rate limiting is per API key: 100 requests a minute, 429 with Retry-After beyond that",
    "Emails are sent by the worker queue, never inline in a request handler",
    "Dates are stored in UTC and converted to the user's time zone only in the UI",
    "The prompt templates are in prompts/ as Jinja files; render them with renderPrompt",
    "Streaming replies use server-sent events; the client reconnects with the last event id",
    "Secrets come from the vault at start-up; never commit .env files",
    "Model calls go through the provider registry so a new LLM vendor is one adapter",
    "Conversation history is truncated to fit the context window, oldest turns first",
    "Format with ruff format and lint with ruff check before pushing",
    "The CLI entry point is src/cli/main.py, built with click",
    "Images are resized to 1024 px on upload by the thumbnail worker",
    "Payments go through Stripe webhooks; verify the signature before trusting an event",
)

# (question, the memory that answers it)
QUESTIONS = (
    ("how does tool execution work", "Tool execution uses runTool"),
    ("how do tools work in this project", "Tool execution uses runTool"),
    ("what happens when a file transfer fails", "Uploads are retried three times"),
    ("which port does the test environment use", "Staging listens on port 6443"),
    ("what package manager should I use", "Use pnpm, never npm"),
    ("how are users kept logged in", "The auth middleware checks the session cookie"),
    ("how do I change the database schema", "Database migrations live in db/migrations"),
    ("where do settings come from", "Config is read from config.toml"),
    ("can I add a debug print in the server", "Logs go to stderr as JSON lines"),
    ("why do the tests fail on my laptop without containers", "The test suite needs Docker running"),
    ("how do we turn features on and off", "Feature flags are evaluated in flags.ts"),
    ("is there caching in front of the endpoints", "API responses are cached in Redis"),
    ("how do I publish a new version", "Release: bump the version"),
    ("what if a client sends too many calls", "Rate limiting is per API key"),
    ("where should notification mail be sent from", "Emails are sent by the worker queue"),
    ("how are timestamps handled across time zones", "Dates are stored in UTC"),
    ("where are the instructions we give the model", "The prompt templates are in prompts/"),
    ("how do we stream the answer to the browser", "Streaming replies use server-sent events"),
    ("where do passwords and api keys live", "Secrets come from the vault"),
    ("how do I support another AI provider", "Model calls go through the provider registry"),
    ("what do we do when the chat gets too long", "Conversation history is truncated"),
    ("which linter and formatter do we use", "Format with ruff format"),
    ("where is the command line tool defined", "The CLI entry point is src/cli/main.py"),
    ("how are pictures shrunk", "Images are resized to 1024 px"),
    ("how do we handle billing callbacks", "Payments go through Stripe webhooks"),
)

# Questions this project's memory has no answer to: how high does the best stray cosine go?
STRAY = (
    "what is the capital of France",
    "how do I bake sourdough bread",
    "who won the football match yesterday",
    "recommend a good science fiction novel",
    "how tall is mount everest",
    "what is the best way to learn the violin",
)


@dataclass
class Score:
    embedder: str
    hit1: float
    hit3: float
    mrr: float
    search1: float
    search3: float
    strong3: float
    answer_cos: float
    stray_cos: float


def answer_index(prefix: str) -> int:
    return next(i for i, m in enumerate(MEMORIES) if m.startswith(prefix))


def cosine_ranks(embedder: Embedder) -> tuple[list[int], list[float], list[float]]:
    """For each question, the answer's 1-based rank by cosine and its cosine; the best stray cosines."""
    memory_vectors = embedder.embed(list(MEMORIES))
    question_vectors = embedder.embed([q for q, _ in QUESTIONS])
    ranks, answers = [], []
    for (_, prefix), qv in zip(QUESTIONS, question_vectors, strict=True):
        cosines = [sum(a * b for a, b in zip(qv, mv, strict=True)) for mv in memory_vectors]
        target = answer_index(prefix)
        ranks.append(1 + sum(c > cosines[target] for c in cosines))
        answers.append(cosines[target])
    strays = [
        max(sum(a * b for a, b in zip(sv, mv, strict=True)) for mv in memory_vectors)
        for sv in embedder.embed(list(STRAY))
    ]
    return ranks, answers, strays


def search_hits(embedder: Embedder, root: Path) -> tuple[float, float, float]:
    """The shares of questions whose answer `tether search` returns first, in its first three, and there
    marked strong."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    home = root.parent / "home"
    home.mkdir()
    init_project(root, home)  # `tether init`
    with Workspace.open(root, home=home, embedder=embedder) as ws:
        ids = {m: ws.add(m).memory.id for m in MEMORIES}
        first = found = strong = 0
        for question, prefix in QUESTIONS:
            want = ids[MEMORIES[answer_index(prefix)]]
            results = ws.search(question, limit=3)
            first += bool(results) and results[0].memory.id == want
            found += any(r.memory.id == want for r in results)
            strong += any(r.memory.id == want and r.confidence == "strong" for r in results)
    n = len(QUESTIONS)
    return first / n, found / n, strong / n


def score(spec: str) -> Score:
    embedder = make_embedder(spec)
    ranks, answers, strays = cosine_ranks(embedder)
    with tempfile.TemporaryDirectory() as tmp:
        search1, search3, strong3 = search_hits(embedder, Path(tmp) / "repo")
    n = len(ranks)
    return Score(
        embedder.id,
        sum(r == 1 for r in ranks) / n,
        sum(r <= 3 for r in ranks) / n,
        sum(1 / r for r in ranks) / n,
        search1,
        search3,
        strong3,
        statistics.median(answers),
        statistics.median(strays),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--embedder",
        action="append",
        help="embedder spec (default: hashed, static, sentence-transformers:all-MiniLM-L6-v2)",
    )
    args = parser.parse_args()
    specs = args.embedder or ["hashed", "static", "sentence-transformers:all-MiniLM-L6-v2"]
    print(f"{len(QUESTIONS)} questions over {len(MEMORIES)} memories, {len(STRAY)} off-topic questions")
    print(
        "| embedder | hit@1 | hit@3 | MRR | search@1 | search@3 | strong@3 | answer cos (median) "
        "| stray cos (median) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for spec in specs:
        s = score(spec)
        print(
            f"| {s.embedder} | {s.hit1:.2f} | {s.hit3:.2f} | {s.mrr:.2f} | {s.search1:.2f} | {s.search3:.2f} | "
            f"{s.strong3:.2f} | "
            f"{s.answer_cos:.2f} | {s.stray_cos:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
