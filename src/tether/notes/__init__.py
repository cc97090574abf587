"""The source of truth: markdown notes (`format`: render and parse) and their sync into the index (`sync`).

Imports `tether.model`, `tether.store.base`, `tether.embed` and `tether.fs`; never a store backend.
"""
