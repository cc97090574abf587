"""The UI's HTTP layer: routes from requests to `UICore` calls to pages, behind `security.Guard`.

Pages are rendered on the server; a change is a POST (CSRF-checked by the guard) answered with a
redirect to a page that shows what changed (post/redirect/get, so a reload never repeats it).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tether.adapters.ui import browse, cleanup, detail, graphpage, playground, review, stats
from tether.adapters.ui.core import NotFoundError, TetherError, UICore, ValidationError
from tether.adapters.ui.html import Html
from tether.adapters.ui.layout import flash_change, flash_text, page
from tether.adapters.ui.security import Guard, Secrets

STATIC = Path(__file__).with_name("static")
MEDIA_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml", ".txt": "text/plain"}
FLASHES = 64  # pending "what changed" messages kept (one per change until its page is shown)

Handler = Callable[[Request], Awaitable[Response]]


class UI:
    """The routes over one `UICore`, with the flash messages and the graph layout cache."""

    def __init__(self, core: UICore, keys: Secrets) -> None:
        self.core = core
        self.keys = keys
        self.flashes: OrderedDict[str, Html] = OrderedDict()
        self.graph_cache: tuple[str, dict[str, Any]] | None = None
        self.static = {p.name: p for p in STATIC.iterdir() if p.suffix in MEDIA_TYPES}

    # -- plumbing ---------------------------------------------------------------------------------

    def routes(self) -> list[Route]:
        get, post = ["GET"], ["POST"]
        return [
            Route("/", self.guarded(self.browse), methods=get),
            Route("/m/{id}", self.guarded(self.detail), methods=get),
            Route("/m/{id}/edit", self.guarded(self.edit_form), methods=get),
            Route("/m/{id}/edit", self.guarded(self.edit), methods=post),
            Route("/m/{id}/delete", self.guarded(self.delete_form), methods=get),
            Route("/m/{id}/delete", self.guarded(self.delete), methods=post),
            Route("/m/{id}/{action:str}", self.guarded(self.act), methods=post),
            Route("/new", self.guarded(self.new_form), methods=get),
            Route("/new", self.guarded(self.new), methods=post),
            Route("/stats", self.guarded(self.stats), methods=get),
            Route("/graph", self.guarded(self.graph), methods=get),
            Route("/cleanup", self.guarded(self.cleanup_page), methods=get),
            Route("/cleanup", self.guarded(self.cleanup), methods=post),
            Route("/review/{id}/{action:str}", self.guarded(self.review), methods=post),
            Route("/recall", self.guarded(self.recall), methods=get),
            Route("/static/{name}", self.asset, methods=get),
        ]

    def guarded(self, handler: Handler) -> Handler:
        """Core errors become pages: an unknown memory 404, anything else the message, 400."""

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except NotFoundError as exc:
                return self.render(request, "Not found", flash_text(str(exc), error=True), status=404)
            except TetherError as exc:
                return self.render(request, "Error", flash_text(str(exc), error=True), status=400)

        return run

    def render(
        self,
        request: Request,
        title: str,
        body: Html,
        *,
        status: int = 200,
        active: str = "",
        scripts: tuple[str, ...] = ("ui.js",),
    ) -> HTMLResponse:
        done = request.query_params.get("done", "")
        flash = self.flashes.pop(done, None) if done else None
        text = page(title, body, project=self.core.title, active=active, flash=flash, scripts=scripts)
        return HTMLResponse(text, status_code=status)

    def done(self, location: str, flash: Html) -> RedirectResponse:
        key = secrets.token_urlsafe(8)
        self.flashes[key] = flash
        while len(self.flashes) > FLASHES:
            self.flashes.popitem(last=False)
        sep = "&" if "?" in location else "?"
        return RedirectResponse(f"{location}{sep}done={key}", status_code=303)

    @staticmethod
    async def form(request: Request) -> dict[str, list[str]]:
        """The urlencoded body (the guard has checked its size and CSRF token)."""
        fields: dict[str, list[str]] = {}
        for key, value in parse_qsl(
            (await request.body()).decode("utf-8", "replace"), keep_blank_values=True
        ):
            fields.setdefault(key, []).append(value)
        return fields

    async def asset(self, request: Request) -> Response:
        path = self.static.get(request.path_params["name"])
        if path is None:
            return PlainTextResponse("no such file", status_code=404)
        return FileResponse(path, media_type=MEDIA_TYPES[path.suffix], headers={"cache-control": "no-cache"})

    # -- pages ------------------------------------------------------------------------------------

    async def browse(self, request: Request) -> Response:
        f = browse.filters_from(dict(request.query_params))
        origins = await run_in_threadpool(self.core.origins)
        if f.state == "pending":
            waiting = await run_in_threadpool(self.core.pending)
            body = browse.pending_page(f, origins, review.review_page(waiting, self.keys.csrf))
            return self.render(request, "Pending review", body, active="/")
        listing = await run_in_threadpool(self.core.listing, f)
        return self.render(request, "Memories", browse.browse_page(f, listing, origins), active="/")

    async def detail(self, request: Request) -> Response:
        d = await run_in_threadpool(self.core.detail, request.path_params["id"])
        return self.render(request, d.memory.summary, detail.detail_page(d, self.keys.csrf))

    async def edit_form(self, request: Request) -> Response:
        memory = await run_in_threadpool(self.core.memory, request.path_params["id"])
        body = detail.memory_form(
            f"/m/{memory.id}/edit",
            self.keys.csrf,
            detail.form_values(memory),
            title=f"Edit {memory.id}",
            submit="Save",
            anchors=tuple(a.spec() for a in memory.anchors),
        )
        return self.render(request, f"Edit {memory.id}", body)

    async def edit(self, request: Request) -> Response:
        mid = request.path_params["id"]
        fields = _single(await self.form(request))
        changes: dict[str, Any] = {
            "summary": fields.get("summary", ""),
            "details": fields.get("details", "").replace("\r\n", "\n"),
            "category": fields.get("category", ""),
            "priority": fields.get("priority", ""),
            "files": _lines(fields.get("files", "")),
        }
        try:
            change = await run_in_threadpool(
                lambda: self.core.edit(mid, changes, allow_secret=fields.get("allow_secret") == "1")
            )
        except NotFoundError:
            raise
        except TetherError as exc:
            body = detail.memory_form(
                f"/m/{mid}/edit", self.keys.csrf, fields, title=f"Edit {mid}", submit="Save", error=str(exc)
            )
            return self.render(request, f"Edit {mid}", body, status=400)
        return self.done(f"/m/{change.memory.id}", flash_change(change))

    async def new_form(self, request: Request) -> Response:
        q = request.query_params
        values = {
            "category": q.get("category", "context"),
            "supersedes": q.get("supersedes", ""),
            "files": "\n".join(q.getlist("file")),
        }
        body = detail.memory_form("/new", self.keys.csrf, values, title="New memory", submit="Add", new=True)
        return self.render(request, "New memory", body, active="/new")

    async def new(self, request: Request) -> Response:
        fields = _single(await self.form(request))
        try:
            change = await run_in_threadpool(
                lambda: self.core.add(
                    fields.get("summary", ""),
                    details=fields.get("details", "").replace("\r\n", "\n"),
                    category=fields.get("category", "context"),
                    files=_lines(fields.get("files", "")),
                    scope=fields.get("scope", "project"),
                    priority=fields.get("priority", "normal"),
                    supersedes=fields.get("supersedes", "").strip() or None,
                    allow_secret=fields.get("allow_secret") == "1",
                )
            )
        except TetherError as exc:
            body = detail.memory_form(
                "/new", self.keys.csrf, fields, title="New memory", submit="Add", error=str(exc), new=True
            )
            return self.render(request, "New memory", body, status=400, active="/new")
        return self.done(f"/m/{change.memory.id}", flash_change(change))

    async def act(self, request: Request) -> Response:
        """Pin, unpin, archive, restore, supersede: one button each, back to the memory with the change."""
        mid = request.path_params["id"]
        action = request.path_params["action"]
        fields = _single(await self.form(request))
        calls: dict[str, Callable[[], Any]] = {
            "pin": lambda: self.core.pin(mid, True),
            "unpin": lambda: self.core.pin(mid, False),
            "archive": lambda: self.core.archive(mid),
            "restore": lambda: self.core.restore(mid),
            "supersede": lambda: self.core.supersede(mid, fields.get("new_id", "").strip()),
        }
        call = calls.get(action)
        if call is None:
            return PlainTextResponse(f"no action {action!r}", status_code=404)
        try:
            change = await run_in_threadpool(call)
        except NotFoundError as exc:
            if action != "supersede":
                raise
            return self.done(f"/m/{mid}", flash_text(str(exc), error=True))
        except ValidationError as exc:
            return self.done(f"/m/{mid}", flash_text(str(exc), error=True))
        return self.done(f"/m/{change.memory.id}", flash_change(change))

    async def delete_form(self, request: Request) -> Response:
        d = await run_in_threadpool(self.core.detail, request.path_params["id"], 0)
        return self.render(request, "Delete?", detail.delete_page(d.memory, d.note_path, self.keys.csrf))

    async def delete(self, request: Request) -> Response:
        mid = request.path_params["id"]
        fields = _single(await self.form(request))
        if fields.get("confirm", "").strip().lower() != mid.strip().lower():
            return self.done(f"/m/{mid}/delete", flash_text("not deleted: confirm on this page", error=True))
        change = await run_in_threadpool(self.core.delete, mid)
        return self.done("/", flash_change(change))

    async def stats(self, request: Request) -> Response:
        data = await run_in_threadpool(self.core.stats)
        return self.render(request, "Stats", stats.stats_page(data), active="/stats")

    async def graph(self, request: Request) -> Response:
        data = await run_in_threadpool(self.core.graph_data)
        sig = graphpage.signature(data)
        if self.graph_cache is None or self.graph_cache[0] != sig:
            self.graph_cache = (sig, await run_in_threadpool(graphpage.payload, data))
        graph = self.graph_cache[1]
        # Labels and flags may change without moving anything: take them from this request's data.
        for node, fresh in zip(graph["nodes"], data["nodes"], strict=True):
            node["l"] = fresh["label"][:120]
            if fresh["kind"] == "memory":
                node.update(cat=fresh["category"], o=fresh["origin"], s=fresh["status"])
                node.pop("p", None)
                if fresh["pinned"]:
                    node["p"] = 1
        origins = await run_in_threadpool(self.core.origins)
        body = graphpage.graph_page(data, graph, origins)
        return self.render(request, "Graph", body, active="/graph", scripts=("ui.js", "graph.js"))

    async def cleanup_page(self, request: Request) -> Response:
        candidates = await run_in_threadpool(self.core.cleanup_candidates)
        return self.render(
            request, "Cleanup", cleanup.cleanup_page(candidates, self.keys.csrf), active="/cleanup"
        )

    async def cleanup(self, request: Request) -> Response:
        ids = (await self.form(request)).get("id", [])
        if not ids:
            return self.done(
                "/cleanup", flash_text("nothing selected: tick the memories to archive", error=True)
            )
        archived = await run_in_threadpool(self.core.cleanup, ids)
        return self.done("/cleanup", cleanup.archived_flash(archived))

    async def review(self, request: Request) -> Response:
        """Approve or reject one pending request, exactly as `tether review approve|reject ID` does."""
        request_id, action = request.path_params["id"], request.path_params["action"]
        calls: dict[str, Callable[[], Html]] = {
            "approve": lambda: review.approved_flash(self.core.approve(request_id)),
            "reject": lambda: review.rejected_flash(self.core.reject(request_id)),
        }
        call = calls.get(action)
        if call is None:
            return PlainTextResponse(f"no action {action!r}", status_code=404)
        try:
            flash = await run_in_threadpool(call)
        except TetherError as exc:  # already decided elsewhere, or refused as the CLI refuses it
            flash = flash_text(f"not {action.rstrip('e')}ed: {exc}", error=True)
        return self.done("/?state=pending", flash)

    async def recall(self, request: Request) -> Response:
        q = request.query_params
        prompt = q.get("prompt", "")
        files = [f.strip() for f in q.getlist("file") if f.strip()]
        work = q.get("work") == "1"
        result = None
        if prompt.strip() or files:
            result = await run_in_threadpool(self.core.playground, prompt, files, work)
        repo_files = await run_in_threadpool(self.core.repo_files)
        body = playground.playground_page(prompt, files, repo_files, result, work)
        return self.render(request, "Recall", body, active="/recall")


def _single(fields: dict[str, list[str]]) -> dict[str, str]:
    return {key: values[-1] for key, values in fields.items()}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def build_app(core: UICore, *, port: int, keys: Secrets | None = None) -> Guard:
    """The whole UI for a server at 127.0.0.1:`port`: the Starlette app behind the guard.

    >>> app = build_app(UICore.open(Path(".")), port=8766)  # doctest: +SKIP
    """
    keys = keys or Secrets()
    ui = UI(core, keys)
    app = Starlette(routes=ui.routes())
    return Guard(app, port, keys)
