"""The package as users get it: the wheel built from this tree, installed into fresh environments.

Marked `packaging` (about 30 s: a build, a fresh venv, pipx and uv installs); `-m "not packaging"` skips it.
"""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tether

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600


def _run(*argv: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, (
        f"{argv} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", out, ROOT)
    [built] = out.glob("tether-*.whl")
    return built


def test_the_wheel_has_complete_metadata_and_only_the_package(wheel: Path) -> None:
    assert wheel.name == f"tether-{tether.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_string(archive.read(info).decode())
    assert meta["Name"] == "tether" and meta["Version"] == tether.__version__
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert meta["Requires-Python"] == ">=3.11" and meta["Author"] == "tether contributors"
    assert "mcp" in (meta["Keywords"] or "")
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in classifiers
    requires = meta.get_all("Requires-Dist") or []
    runtime = [r for r in requires if "extra ==" not in r]
    assert {r.split(">")[0].split("<")[0].strip() for r in runtime} == {
        "click",
        "PyYAML",
        "mcp",
        "numpy",
        "tomlkit",
        "markdown-it-py",  # rule files are parsed as markdown
        # anchors' symbols (issue 10): the parser and one grammar per language, wheels on every platform
        "tree-sitter",
        "tree-sitter-python",
        "tree-sitter-javascript",
        "tree-sitter-typescript",
        "tree-sitter-go",
        "tree-sitter-rust",
        # the writer lock where there is no fcntl: Windows only (`tether.fs.file_lock`)
        "filelock",
    }
    assert [r for r in runtime if r.startswith("filelock")] == ['filelock>=3.13; sys_platform == "win32"']
    assert "tether/py.typed" in names and "tether/adapters/install/guard.py" in names
    # The static embedder's model ships inside the package, with its licence note.
    model = "tether/embed/data/minilm-static/"
    assert {model + f for f in ("model.safetensors", "tokenizer.json", "config.json", "README.md")} <= set(
        names
    )
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "plugins/", "bin/"))]


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    _run("git", "init", "-q", repo)
    (repo / "deploy.yaml").write_text("port: 6443\n")
    # The machine's own settings (registries, certificates, caches) stay: only tether's data is private.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    return repo, {**env, "TETHER_HOME": str(tmp_path / "tether-home")}


def _use(tether_bin: Path, repo: Path, env: dict[str, str]) -> None:
    """`tether --version`, then init, add and recall, from the installed command."""
    assert _run(tether_bin, "--version", env=env).strip() == f"tether, version {tether.__version__}"
    _run(tether_bin, "init", cwd=repo, env=env)
    _run(tether_bin, "add", "Staging listens on port 6443", "--file", "deploy.yaml", cwd=repo, env=env)
    recalled = _run(tether_bin, "recall", "--prompt", "which port does staging use?", cwd=repo, env=env)
    assert "Staging listens on port 6443" in recalled
    # Search by meaning with the packaged static model: the question is asked in other words.
    _run(tether_bin, "config", "embedder", "static", cwd=repo, env=env)
    _run(tether_bin, "add", "Tool execution uses runTool", cwd=repo, env=env)
    found = _run(tether_bin, "search", "how do tools work in this project", cwd=repo, env=env)
    assert "Tool execution uses runTool" in found.splitlines()[0]
    # The read commands started the project's resident process: stopped here, not left idling for 30 min.
    assert _run(tether_bin, "resident", "stop", cwd=repo, env=env).strip() in ("stopping", "not running")


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (its dependencies from the index, as a user gets them)."""
    venv = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", venv)
    _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel)
    return venv


def test_the_wheel_installs_into_a_fresh_venv_and_works(venv: Path, tmp_path: Path) -> None:
    repo, env = _project(tmp_path)
    _use(venv / "bin" / "tether", repo, env)
    # The demo (`bin/demo` in a checkout) runs from the installed package alone.
    shown = _run(venv / "bin" / "tether", "demo", "--dir", tmp_path / "demo", cwd=tmp_path, env=env)
    assert "charge() must stay idempotent" in shown and "Traceback" not in shown
    demo = {**env, "TETHER_HOME": str(tmp_path / "demo" / "tether-home")}  # the demo's own, as it prints
    _run(venv / "bin" / "tether", "resident", "stop", cwd=tmp_path / "demo" / "shop", env=demo)


def _quick_start() -> str:
    """The README's quick start: the `sh` block after "Then, in a repository:", as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text.split("Then, in a repository:", 1)[1]
    return after.split("```sh\n", 1)[1].split("```", 1)[0]


def test_the_readme_quick_start_runs_verbatim_in_a_fresh_directory(venv: Path, tmp_path: Path) -> None:
    script = _quick_start()
    assert script.startswith("cd your-repo\n") and "tether install claude --project" in script
    (tmp_path / "your-repo").mkdir()
    _run("git", "init", "-q", tmp_path / "your-repo")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "GIT_"))}
    env |= {
        "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",  # tether on PATH, as pipx puts it
        "HOME": str(tmp_path / "home"),  # the user's own agent settings are never touched
        "TETHER_HOME": str(tmp_path / "tether-home"),
        **{
            f"GIT_{who}_{what}": value
            for who in ("AUTHOR", "COMMITTER")
            for what, value in (("NAME", "T"), ("EMAIL", "t@example.com"))
        },
    }
    _run("bash", "-euo", "pipefail", "-c", script, cwd=tmp_path, env=env)
    repo = tmp_path / "your-repo"
    committed = _run("git", "show", "--name-only", "--format=%s", "HEAD", cwd=repo, env=env)
    assert committed.startswith("project memory")
    assert (
        ".tether/.gitignore" in committed and ".tether/config.toml" in committed and ".mcp.json" in committed
    )
    assert committed.count(".tether/memories/") == 2 and "tether-backup" not in committed
    assert _run("git", "status", "--porcelain", cwd=repo, env=env) == ""  # nothing else left to commit
    _run(venv / "bin" / "tether", "resident", "stop", cwd=repo, env=env)


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_pipx_and_uv_install_the_wheel_as_a_tool(wheel: Path, tmp_path: Path, tool: str) -> None:
    program = Path(sys.executable).with_name(tool)
    if not program.exists():
        pytest.skip(f"{tool} is not installed (it is in the dev extras)")
    repo, env = _project(tmp_path)
    bin_dir = tmp_path / "bin"
    if tool == "pipx":
        env |= {
            "PIPX_HOME": str(tmp_path / "pipx"),
            "PIPX_BIN_DIR": str(bin_dir),
            "PIPX_MAN_DIR": str(tmp_path / "man"),
        }
        _run(program, "install", "--python", sys.executable, wheel, env=env)
    else:
        env |= {"UV_TOOL_DIR": str(tmp_path / "uv-tools"), "UV_TOOL_BIN_DIR": str(bin_dir)}
        _run(program, "tool", "install", "--python", sys.executable, wheel, env=env)
    assert shutil.which("tether", path=str(bin_dir)) is not None
    _use(bin_dir / "tether", repo, env)
