"""`tether ui`: a local web app over the memory (browse, act, stats, graph, cleanup, recall playground).

Every call into the core is in `core.py`; the pages import it, the HTTP layer (`app`, `security`, `server`),
Starlette and uvicorn (the `ui` extra); never another adapter.
"""
