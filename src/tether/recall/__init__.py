"""Recall: `scoring` (every constant, with its reason), `evidence` (what is known of a candidate), `channels`
(the ranked lists), `recaller` (fusion, filters, budget) and `work` (a session's first prompts with the work in
progress in the tree).

Sees the store through `tether.store.base` only; may import `tether.repo`, `tether.anchors` (where an edit
lands against a memory's anchors), `tether.embed`, `tether.model`.
"""
