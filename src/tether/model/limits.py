"""The size limits of everything tether reads, in one place, each with its reason.

Every input can come from someone else: a committed note, an agent's tool call, a hook's JSON, a form
in the web UI, an export file. Each is bounded where it enters, so one oversized input costs a clear error
(or, where an agent waits, a quiet skip) instead of minutes of parsing, embedding or scanning for secrets.

>>> SUMMARY_MAX, DETAILS_MAX
(160, 100000)
"""

from __future__ import annotations

# One line is what gets injected; 160 characters keeps three summaries and their receipts well inside
# the ~2,400-character injection budget.
SUMMARY_MAX = 160
# A memory's body is fetched on demand and embedded with its summary. The longest design notes in the
# evaluation's repositories are ~20 KB; five times that still embeds and scans for secrets in well under a
# second, and keeps a note far from a size that would slow every sync.
DETAILS_MAX = 100_000
# A memory naming hundreds of paths is about a directory (name the directory); a note's frontmatter
# stays small, and every path is a row in the index.
FILES_MAX = 200
# Linux's PATH_MAX: no real path is longer.
PATH_MAX = 4_096
# A note file: frontmatter plus at most DETAILS_MAX characters (four bytes each at worst). A larger
# file is no tether note: it is skipped and reported, never read whole into memory.
NOTE_MAX_BYTES = 512 * 1024
# A rule file (AGENTS.md, CLAUDE.md, ...): the largest in the evaluation's repositories are ~60 KB.
RULE_FILE_MAX_BYTES = 1024 * 1024
# A search query is words, a symbol or a pasted error; the sanitizer keeps the question out of a pasted
# trace. Past this, `memory_search` and `tether search` answer with an error at once.
QUERY_MAX = 20_000
# A prompt the user typed or pasted (logs, a diff): recall reads only its tail, where the question is
# (the sanitizer keeps the last question sentence), so a megabyte paste costs nothing more than this.
PROMPT_TAIL = 50_000
# A hook's JSON from the agent. Claude Code's PostToolUse carries the tool's response (a Read is capped
# near 256 KB of text); past this the hook fails open without parsing it.
HOOK_INPUT_MAX_BYTES = 8 * 1024 * 1024
# One JSON-RPC message to the MCP server over HTTP: a memory at its largest with its JSON escaping. The
# SDK's own default is 1 MB per request body.
MCP_BODY_MAX_BYTES = 1024 * 1024
# Free-text arguments that are only logged (an archive reason).
REASON_MAX = 1_000
# One line of `tether import`: a memory at its largest, JSON-escaped (six bytes a character at worst).
IMPORT_LINE_MAX = 6 * (DETAILS_MAX + 2 * SUMMARY_MAX + FILES_MAX * 256)
# A form posted to the web UI: one memory's fields, with room for a long file list.
FORM_MAX_BYTES = 1024 * 1024
# Tags and aliases (Obsidian's frontmatter lists): a note carries a handful; a tag is one word (Obsidian
# nests with `/`), an alias is another title for the note, as long as a summary at most.
TAGS_MAX = 32
TAG_MAX_CHARS = 64
ALIASES_MAX = 16
