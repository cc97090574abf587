"""Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, llama.cpp, vLLM, LM Studio...).

stdlib only (urllib), so the base install can talk to a local embedding server.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from tether.config import check_endpoint
from tether.embed import Vector, normalize
from tether.embed.providers._common import EmbedderError
from tether.errors import ConfigError

# OpenAI accepts up to 2048 inputs a request; local servers are happier with smaller ones.
DEFAULT_BATCH_SIZE = 64
DEFAULT_TIMEOUT = 30.0
_ERROR_BODY_CHARS = 300


def embeddings_url(base_url: str) -> str:
    """The embeddings URL for a base URL given with or without `/v1` (or already ending in `/embeddings`)."""
    parsed = urllib.parse.urlsplit(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(
            f"embedding endpoint {base_url!r} is not an http(s) URL; "
            "use e.g. 'openai:http://localhost:11434#nomic-embed-text'"
        )
    check_endpoint(base_url, "embedding endpoint")  # plain http only to this machine
    path = parsed.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path = path + "/embeddings" if path.endswith("/v1") else path + "/v1/embeddings"
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, parsed.query, ""))


class OpenAIEmbedder:
    """Embeds by POSTing batches to an OpenAI-compatible embeddings endpoint.

    The id names the model, not the host: the same model served elsewhere gives the same space.

    >>> OpenAIEmbedder("http://localhost:11434", "nomic-embed-text").embed(["retry"])  # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = DEFAULT_BATCH_SIZE,
        dimension: int | None = None,
    ) -> None:
        if not model:
            raise ConfigError(
                f"embedding endpoint {base_url!r} needs a model: 'openai:{base_url}#<model name>'"
            )
        self._url = embeddings_url(base_url)
        self._model = model
        self._api_key = api_key
        self._timeout = timeout
        self._batch_size = max(1, batch_size)
        self._dimension = dimension

    @property
    def id(self) -> str:
        return f"openai:{self._model}"

    @property
    def url(self) -> str:
        return self._url

    @property
    def dimension(self) -> int:
        """The endpoint's vector size; unless given, learnt from one probe request the first time."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        vectors: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(self._embed_batch(list(texts[start : start + self._batch_size])))
        return vectors

    def _embed_batch(self, texts: list[str]) -> list[Vector]:
        # OpenAI rejects an empty string as input; a lone space embeds as "nothing" just the same.
        inputs = [text if text else " " for text in texts]
        reply = self._post({"model": self._model, "input": inputs, "encoding_format": "float"})
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            count = len(data) if isinstance(data, list) else "no"
            raise EmbedderError(
                f"{self._url} answered {count} embeddings for {len(texts)} inputs; "
                "is it an OpenAI-compatible /v1/embeddings endpoint?"
            )
        ordered = sorted(data, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
        vectors = [self._vector(item) for item in ordered]
        for vector in vectors:
            if self._dimension is None:
                self._dimension = len(vector)
            elif len(vector) != self._dimension:
                raise EmbedderError(
                    f"{self._url} returned a {len(vector)}-dim vector for model {self._model!r}, "
                    f"expected {self._dimension}; did the model behind the endpoint change?"
                )
        return vectors

    def _vector(self, item: Any) -> Vector:
        values = item.get("embedding") if isinstance(item, dict) else None
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            or not all(math.isfinite(v) for v in values)
        ):
            raise EmbedderError(
                f"{self._url} returned an embedding that is not a list of finite numbers "
                "(base64 encoding is not supported)"
            )
        return normalize(values)

    def _post(self, payload: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self._url, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(_ERROR_BODY_CHARS).decode("utf-8", "replace").strip()
            hint = " (check TETHER_EMBED_API_KEY / OPENAI_API_KEY)" if exc.code in (401, 403) else ""
            raise EmbedderError(
                f"{self._url} answered HTTP {exc.code} {exc.reason} for model {self._model!r}{hint}: "
                f"{detail or 'no body'}"
            ) from exc
        except TimeoutError as exc:
            raise EmbedderError(
                f"{self._url} did not answer within {self._timeout:g}s; is the embedding server busy or down?"
            ) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise EmbedderError(
                    f"{self._url} did not answer within {self._timeout:g}s; "
                    "is the embedding server busy or down?"
                ) from exc
            raise EmbedderError(f"cannot reach {self._url}: {exc.reason}; is the server running?") from exc
        except OSError as exc:
            raise EmbedderError(f"connection to {self._url} failed: {exc}") from exc
        try:
            return json.loads(body)
        except ValueError as exc:
            snippet = body[:_ERROR_BODY_CHARS].decode("utf-8", "replace")
            raise EmbedderError(f"{self._url} did not answer JSON: {snippet!r}") from exc
