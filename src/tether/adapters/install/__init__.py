"""`tether install|uninstall AGENT`: what each agent gets (`specs`), careful edits of its JSON and TOML config
files (`jsonconf`, `tomlconf`, `files`), the installer (`installer`) and its click commands (`commands`).

May import click (its commands only) and the core's `errors` and `fs`; never another adapter.
"""
