"""Anchors: memories tied to places inside files (symbols and line ranges), found again as the code moves.

- `fingerprint`: the whitespace-normalized hash of anchored lines, and finding a block by it;
- `symbols`: definitions of a file (Python, JavaScript, TypeScript, Go, Rust) with tree-sitter, loaded lazily;
- `resolve`: a file as anchors see it (`FileView`), resolving an anchor (symbol, then fingerprint near its old
  place, then anywhere; else lost) and making one from `--at path::Symbol` or `--at path:120-140`;
- `locations`: where an edit lands (`Location`), and the distance from an anchor to it;
- `edits`: edit locations out of each agent's payload (an `old_string`, a patch's hunks, a whole-file write);
- `scan`: memories proposed from warning comments (`tether anchors scan`).

The anchor record itself is `tether.model.anchor`. May import `tether.model` and `tether.errors` only (and
the tree-sitter grammars, lazily).
"""
