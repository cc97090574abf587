"""Machinery behind `tether.adapters.install.installer`: what each agent gets, and careful edits of JSON and TOML config files."""
