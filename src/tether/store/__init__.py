"""Storage: `base` (the protocols, in tether's own types), `memory` (the in-memory reference store), `sqlite`.

`base` imports only `tether.model`; a backend imports `base`, `tether.model` and its own driver.
"""
