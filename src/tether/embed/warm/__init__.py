"""The warm embedding process: one per project and model on a private Unix socket (`server`, `client`).

Imports `tether.embed`, `tether.fs`, `tether.detach` and `tether.errors` only; no model library until it serves.
"""
