"""`tether anchors scan`: memories proposed from the warning comments in the code, accepted one by one.

Registered on the main group by `tether.adapters.cli.main`. Nothing is written without the user saying so:
on a terminal each proposal is asked about; otherwise the proposals are listed (`--json` for tools) and
`--accept ID...` adds the chosen ones.
"""

from __future__ import annotations

import sys

import click

from tether.adapters.cli.common import echo, emit, json_option, workspace
from tether.anchors.scan import Proposal, scan
from tether.errors import TetherError
from tether.model.memory import content_hash, normalize_path
from tether.repo.git import list_files, probe
from tether.workspace import Workspace


@click.group(name="anchors")
def anchors_group() -> None:
    """Anchors: memories tied to symbols and lines inside files (`tether add --at`)."""


@anchors_group.command(name="scan")
@click.argument("paths", nargs=-1)
@click.option("--accept", "accept", multiple=True, metavar="ID", help="Add the proposals with these ids.")
@json_option
def scan_command(paths: tuple[str, ...], accept: tuple[str, ...], as_json: bool) -> None:
    """Propose gotchas from warning comments (NOTE:, WARNING:, HACK:, SAFETY:, "do not", "must") in PATHS
    (default: the whole repository), each anchored to its lines. Asks about each one on a terminal;
    otherwise lists them for `--accept ID...`. Comments already in memory are left out."""
    with workspace() as ws:
        proposals = _proposals(ws, paths)
        if accept:
            wanted = {a.strip().lower() for a in accept}
            chosen = [p for p in proposals if p.id in wanted]
            missing = wanted - {p.id for p in chosen}
            if missing:
                raise TetherError(
                    f"no proposal {', '.join(sorted(missing))} (already accepted, or not found in "
                    f"{' '.join(paths) or 'the repository'}): `tether anchors scan --json` lists them"
                )
            for proposal in chosen:
                _accept(ws, proposal)
            return
        if as_json:
            emit([p.to_json() for p in proposals])
            return
        if not proposals:
            echo("no warning comments to propose (those already in memory are left out)", err=True)
            return
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            for p in proposals:
                echo(f"{p.id}  {p.to_json()['at']}  {p.summary}")
            echo(
                f"\n{len(proposals)} proposal(s): add them with `tether anchors scan --accept ID ...`",
                err=True,
            )
            return
        for index, p in enumerate(proposals, 1):
            within = f" (in {p.anchor.within})" if p.anchor.within else ""
            echo(f"\n[{index}/{len(proposals)}] {p.to_json()['at']}{within}\n  {p.summary}")
            answer = click.prompt("  remember it?", type=click.Choice(["y", "n", "q"]), default="n")
            if answer == "q":
                break
            if answer == "y":
                _accept(ws, p)


def _proposals(ws: Workspace, paths: tuple[str, ...]) -> list[Proposal]:
    root = ws.root
    assert root is not None
    relative = [normalize_path(p, root, ws.cwd) for p in paths]
    files = list_files(root, probe(root) is not None)
    out = []
    for proposal in scan(root, relative, files):
        if ws.store.get(proposal.id) is not None or ws.store.by_hash(
            content_hash(proposal.summary, proposal.details)
        ):
            continue
        out.append(proposal)
    return out


def _accept(ws: Workspace, proposal: Proposal) -> None:
    added = ws.add(
        proposal.summary,
        details=proposal.details,
        category="gotcha",
        anchors=[proposal.anchor],
        memory_id=proposal.id,
    )
    verb = "added" if added.created else "already known"
    echo(f"{verb}: {added.memory.id} at {proposal.to_json()['at']}  {added.memory.summary}")


COMMANDS = (anchors_group,)
