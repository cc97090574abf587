"""Which embedder a process uses, for queries and for the memories it indexes (DESIGN §7).

A hook must never wait seconds for a model to load. So in a *light* process (a hook) with a real model
configured, the model is reached only through the warm embedding process (`tether.embed.warm`): queries go
there with a short timeout (failing open to no semantic channel), and memories indexed meanwhile get no
vector (the next command, or a later hook that finds the warm process up, embeds them). Everyone else loads
the configured embedder in process, lazily, on first use.

    >>> EmbedderPolicy("hashed", Path(".tether/index.db")).query_embedder.id
    'hashed-v2-384'
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tether.embed.base import Embedder
from tether.embed.hashed import HashedEmbedder

if TYPE_CHECKING:
    from tether.embed.warm.client import RemoteEmbedder


def in_process(spec: str) -> bool:
    """Whether the embedder `spec` names is cheap enough for any process, a hook included.

    >>> in_process("static"), in_process("sentence-transformers:all-MiniLM-L6-v2")
    (True, False)
    """
    text = spec.strip()
    return text in ("hashed", "") or text.partition(":")[0] == "static"


class EmbedderPolicy:
    """The embedder of one workspace: `spec` is the `embedder` config key (hashed, auto, a model spec)."""

    def __init__(
        self,
        spec: str,
        index: Path,
        *,
        injected: Embedder | None = None,
        light: bool = False,
        warm_enabled: bool = True,
        warm_timeout_ms: int = 300,
        log: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.spec = spec
        self.index = index
        self.light = light
        self.warm_enabled = warm_enabled
        self.warm_timeout_ms = warm_timeout_ms
        self._log = log
        self._injected = injected is not None
        self._embedder = injected
        self._warm: RemoteEmbedder | None = None
        self._warm_asked = False

    @property
    def heavy(self) -> bool:
        """A real model is configured (not passed in): loading it takes seconds, too long for a hook.

        The hashed embedder and static models (a table read in milliseconds) are not heavy: a hook embeds
        with them in process."""
        return not self._injected and not in_process(self.spec)

    @property
    def via_warm_process(self) -> bool:
        """A hook with a real model configured: it reaches the model only through the warm process."""
        return self.light and self.heavy

    @property
    def semantic_available(self) -> bool:
        """Whether a query can be embedded: always, except in a hook with a real model and no warm process."""
        return not self.via_warm_process or self.warm() is not None

    @property
    def query_embedder(self) -> Embedder:
        """The configured embedder. In a light process with a real model, the warm process's, for queries:
        one that fails there answers a zero vector (it matches nothing), so recall goes on without the
        semantic channel instead of failing."""
        if self._embedder is None:
            warm = self.warm() if self.via_warm_process else None
            if self.spec.strip() in ("hashed", ""):
                self._embedder = HashedEmbedder()
            elif warm is not None:
                from tether.embed.warm.client import FailOpenQueries

                self._embedder = FailOpenQueries(warm, self._log)
            else:
                from tether.embed.providers import make_embedder

                self._embedder = make_embedder(self.spec)
        return self._embedder

    def warm(self) -> RemoteEmbedder | None:
        """The warm embedding process serving this project's model, if one answers ready (asked once)."""
        if not self._warm_asked:
            self._warm_asked = True
            from tether.embed.warm.client import RemoteEmbedder, socket_path, supported

            if self.warm_enabled and supported():
                remote = RemoteEmbedder(
                    socket_path(self.index, self.spec), self.spec, timeout=self.warm_timeout_ms / 1000
                )
                if remote.ready():
                    self._warm = remote
        return self._warm

    def writer(self) -> Embedder | None:
        """What embeds memories as they are indexed. In a hook with a real model: the warm process, or
        None without one (the notes are indexed without vectors; the next command embeds them)."""
        if self.via_warm_process:
            return self.warm()
        return self.query_embedder

    def failures(self) -> tuple[type[Exception], ...]:
        """The errors a hook survives by indexing without vectors: the warm process's (none elsewhere)."""
        if not self.via_warm_process:
            return ()
        from tether.embed.providers import EmbedderError  # already loaded by the warm process's client

        return (EmbedderError,)
