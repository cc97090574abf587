"""Opening a team database for a workspace: the extra checked, the tenant worked out, the composite made.

>>> store = open_team("postgresql:///tether", local, root=Path("."), home=Path("~/.tether"))  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tether.store.base import Store
from tether.store.postgres import driver
from tether.store.postgres.tenancy import Tenant, project_id, user_id

if TYPE_CHECKING:
    from tether.store.postgres.store import PostgresStore
    from tether.store.postgres.team import TeamStore

# The local index's cache of the project id: deriving it runs git (a few ms) and a hook runs often.
PROJECT_ID_META = "team.project_id"
# How long to wait for the server: a hook has a 3 s deadline of its own and must fail open well inside it.
HOOK_CONNECT_TIMEOUT = 1.0
CONNECT_TIMEOUT = 10.0


def tenant_for(local: Store, root: Path | None, home: Path) -> Tenant:
    """This checkout's tenant; the project id is cached in the local index once derived."""
    project = None
    if root is not None:
        project = local.get_meta(PROJECT_ID_META)
        if not project:
            project = project_id(root)
            local.set_meta(PROJECT_ID_META, project)
    return Tenant(project, user_id(home))


def open_shared(url: str, tenant: Tenant, *, light: bool = False) -> PostgresStore:
    """The shared store alone (what `tether store copy` writes to). Raises `StoreUnavailable`."""
    driver.require()
    from tether.store.postgres.store import PostgresStore

    timeout = HOOK_CONNECT_TIMEOUT if light else CONNECT_TIMEOUT
    # A hook neither builds vector indexes (a build can outlast its deadline) nor needs more than one
    # connection; a long-lived process (the MCP server, the UI) may hold a few.
    return PostgresStore(
        url, tenant, connect_timeout=timeout, max_connections=1 if light else 4, build_indexes=not light
    )


def open_team(url: str, local: Store, *, root: Path | None, home: Path, light: bool = False) -> TeamStore:
    """The workspace's `Store` over the team database at `url` and the checkout's index `local`."""
    driver.require()
    from tether.store.postgres.team import TeamStore

    return TeamStore(open_shared(url, tenant_for(local, root, home), light=light), local)
