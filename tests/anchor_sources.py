"""The same three functions and a method in each language anchors support, and the edits the tests make."""

from __future__ import annotations

SOURCES = {
    "billing.py": (
        "import gateway\n"
        "\n"
        "\n"
        "def charge_card(order, key):\n"
        "    # never retry without the same key\n"
        "    return gateway.post(order.total, key)\n"
        "\n"
        "\n"
        "def refund(order, cents):\n"
        "    return gateway.refund(order.id, cents)\n"
        "\n"
        "\n"
        "def capture(order):\n"
        "    return gateway.capture(order.id)\n"
        "\n"
        "\n"
        "class Charger:\n"
        "    def run(self, order):\n"
        "        return charge_card(order, order.key)\n"
    ),
    "billing.js": (
        "const gateway = require('./gateway')\n"
        "\n"
        "function charge_card(order, key) {\n"
        "  // never retry without the same key\n"
        "  return gateway.post(order.total, key)\n"
        "}\n"
        "\n"
        "function refund(order, cents) {\n"
        "  return gateway.refund(order.id, cents)\n"
        "}\n"
        "\n"
        "const capture = (order) => {\n"
        "  return gateway.capture(order.id)\n"
        "}\n"
        "\n"
        "class Charger {\n"
        "  run(order) {\n"
        "    return charge_card(order, order.key)\n"
        "  }\n"
        "}\n"
    ),
    "billing.ts": (
        "import { gateway } from './gateway'\n"
        "\n"
        "export function charge_card(order: Order, key: string): Promise<void> {\n"
        "  // never retry without the same key\n"
        "  return gateway.post(order.total, key)\n"
        "}\n"
        "\n"
        "function refund(order: Order, cents: number) {\n"
        "  return gateway.refund(order.id, cents)\n"
        "}\n"
        "\n"
        "export const capture = (order: Order) => {\n"
        "  return gateway.capture(order.id)\n"
        "}\n"
        "\n"
        "export class Charger {\n"
        "  run(order: Order): Promise<void> {\n"
        "    return charge_card(order, order.key)\n"
        "  }\n"
        "}\n"
    ),
    "billing.go": (
        "package billing\n"
        "\n"
        "func charge_card(order Order, key string) error {\n"
        "\t// never retry without the same key\n"
        "\treturn gateway.Post(order.Total, key)\n"
        "}\n"
        "\n"
        "func refund(order Order, cents int) error {\n"
        "\treturn gateway.Refund(order.ID, cents)\n"
        "}\n"
        "\n"
        "func capture(order Order) error {\n"
        "\treturn gateway.Capture(order.ID)\n"
        "}\n"
        "\n"
        "type Charger struct{}\n"
        "\n"
        "func (c *Charger) run(order Order) error {\n"
        "\treturn charge_card(order, order.Key)\n"
        "}\n"
    ),
    "billing.rs": (
        "use crate::gateway;\n"
        "\n"
        "fn charge_card(order: &Order, key: &str) -> Result<()> {\n"
        "    // never retry without the same key\n"
        "    gateway::post(order.total, key)\n"
        "}\n"
        "\n"
        "fn refund(order: &Order, cents: i64) -> Result<()> {\n"
        "    gateway::refund(order.id, cents)\n"
        "}\n"
        "\n"
        "fn capture(order: &Order) -> Result<()> {\n"
        "    gateway::capture(order.id)\n"
        "}\n"
        "\n"
        "struct Charger;\n"
        "\n"
        "impl Charger {\n"
        "    fn run(&self, order: &Order) -> Result<()> {\n"
        "        charge_card(order, &order.key)\n"
        "    }\n"
        "}\n"
    ),
}
LANGS = sorted(SOURCES)
ABOVE = {
    ".py": "import os\nimport sys\n\n\nLIMIT = 3\n",
    ".js": "const os = require('os')\nconst LIMIT = 3\n\n",
    ".ts": "import os from 'os'\nconst LIMIT = 3\n\n",
    ".go": "",  # added after the package clause (see `above`)
    ".rs": "use std::fmt;\nconst LIMIT: u32 = 3;\n\n",
}


def above(path: str, text: str) -> str:
    """`text` with code added near the top (5 lines for Go, after its package clause)."""
    if path.endswith(".go"):
        head, rest = text.split("\n", 1)
        return f'{head}\n\nimport "os"\n\nconst LIMIT = 3\n{rest}'
    return ABOVE[path[path.rfind(".") :]] + text


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def def_line(text: str) -> int:
    """The line defining charge_card (not the one calling it)."""
    return next(
        i
        for i, line in enumerate(text.splitlines(), 1)
        if "charge_card(order" in line and "order.key" not in line.lower()
    )
