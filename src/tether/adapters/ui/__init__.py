"""`tether ui`: a local web app over the memory (browse, act, stats, graph, cleanup, recall playground)."""
