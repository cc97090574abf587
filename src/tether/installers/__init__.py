"""Machinery behind `tether.install`: what each agent gets, and careful edits of JSON and TOML config files."""
