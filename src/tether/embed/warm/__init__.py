"""The warm embedding process: one per project and model on a private Unix socket, or on loopback TCP with a
token where there are none (`server`, `client`; the transport is `tether.transport`'s).

Imports `tether.embed`, `tether.fs`, `tether.detach`, `tether.transport` and `tether.errors` only; no model
library until it serves.
"""
