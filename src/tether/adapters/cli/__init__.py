"""The `tether` command line: click commands over `tether.workspace` (`main` holds the group).

May import click and the core; never another adapter.
"""
