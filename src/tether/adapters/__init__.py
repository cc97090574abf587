"""The adapters: thin layers that turn people's and agents' input into calls of the core library.

`cli`, `hooks`, `mcp`, `install` (and `ui`) may import the core (`tether.workspace` and below), never each other;
the composition root `tether.__main__` attaches one adapter's commands to another's CLI.
"""
