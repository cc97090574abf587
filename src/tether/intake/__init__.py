"""Knowledge coming in: rule files (`rulefiles`, `rules`), seed files and Claude Code's notes (`seeds`), JSON lines
(`jsonl`) and auto-distill (`distill`, `llm`, `transcript`, `autodistill`).

Writes through `tether.memories`; may import `tether.repo`, `tether.notes`, `tether.model`, never `tether.lifecycle`,
`tether.workspace` or an adapter.
"""
