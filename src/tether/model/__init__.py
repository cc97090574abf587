"""The memory record and the rules of its text: `memory` (fields, validation), `text` (words, stopwords, summaries),
`prompt` (what a prompt asks), `display` (escaping), `secrets`, `timestamps`. No I/O.

Imports nothing of tether but `tether.errors`.
"""
