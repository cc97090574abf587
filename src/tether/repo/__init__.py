"""The repository as evidence: `git` (reading history), `map` (files, renames, co-change, fan-in), `imports`
and `pyscan` (import lines).

Imports `tether.store.base` (its rows live behind `RepoMapStore`) and `tether.errors` only.
"""
