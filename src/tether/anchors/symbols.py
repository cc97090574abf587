"""The definitions of a source file (functions, classes, methods, types), with tree-sitter.

Python, JavaScript, TypeScript (and TSX), Go and Rust. The grammars are PyPI wheels (`tree-sitter-python`,
...), imported on first use: a hook that never meets a symbol anchor never loads one. Names are qualified
by their containers with dots, the way `--at path::Class.method` spells them: a Python method
`Charger.charge`, a Go method `Server.Handle` (its receiver's type), a Rust `impl Foo { fn new }` as
`Foo.new`, a TypeScript class member `Api.fetch`. A definition's lines include its decorators, an
`export` in front of it and the comment block right above it (doc comments are about what follows).

>>> [(d.name, d.start, d.end) for d in definitions("a.py", "class A:\\n    def run(self):\\n        pass\\n")]
[('A', 1, 3), ('A.run', 2, 3)]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

# File suffix → grammar name.
LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
}
_JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "method_definition": "method",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "namespace",
    "method_signature": "method",
    "abstract_method_signature": "method",
}
# Node type → kind of definition, per grammar. Containers qualify what they hold (`Class.method`).
_DEFINITIONS: dict[str, dict[str, str]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "javascript": _JS_DEFS,
    "typescript": _JS_DEFS,
    "tsx": _JS_DEFS,
    "go": {"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
    "rust": {
        "function_item": "function",
        "function_signature_item": "function",
        "struct_item": "struct",
        "enum_item": "enum",
        "union_item": "union",
        "trait_item": "trait",
        "mod_item": "module",
        "const_item": "const",
        "static_item": "static",
        "type_item": "type",
        "macro_definition": "macro",
    },
}
# Values that make a `const f = ...` (JS/TS) a definition of `f`.
_JS_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function", "class"}
# Nodes that only wrap a definition: its lines start at theirs.
_WRAPPERS = {"decorated_definition", "export_statement", "lexical_declaration", "variable_declaration"}
_COMMENTS = {"comment", "line_comment", "block_comment"}


@dataclass(frozen=True)
class Definition:
    name: str  # qualified: `Class.method`
    kind: str  # function, class, method, type, ...
    start: int  # 1-based, decorators, `export` and the comment right above included
    end: int

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


def available(path: str) -> bool:
    """Whether symbols of `path` can be read here (a known language, its grammar installed)."""
    language = language_of(path)
    return language is not None and parser_for(language) is not None


def definitions(path: str, text: str) -> list[Definition] | None:
    """Every definition in `text` (the file `path`), in source order; None when the language is not
    supported or its grammar is not installed."""
    language = language_of(path)
    if language is None:
        return None
    parser = parser_for(language)
    if parser is None:
        return None
    tree = parser.parse(text.encode("utf-8", "surrogateescape"))
    found: list[Definition] = []
    _walk(tree.root_node, language, found)
    return found


def enclosing(defs: list[Definition], first: int, last: int) -> list[Definition]:
    """The definitions holding lines `first..last`, outermost first."""
    return [d for d in defs if d.start <= first and last <= d.end]


def _walk(root: Any, language: str, found: list[Definition]) -> None:
    """Every definition under `root`, captured by one tree-sitter query (in C), qualified by its containers."""
    from tree_sitter import QueryCursor

    nodes: list[Any] = []
    for captured in QueryCursor(_query(language)).captures(root).values():
        nodes.extend(captured)
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    names: dict[int, str] = {}  # node id → its own name ("" when it defines nothing)
    for node in nodes:
        kind, name = _classify(node, language)
        if kind is None or not name:
            continue
        scope: list[str] = []
        parent = node.parent
        while parent is not None:
            if parent.id not in names:
                names[parent.id] = _container_name(parent, language)
            if names[parent.id]:
                scope.append(names[parent.id])
            parent = parent.parent
        qualified = [*reversed(scope), *_receiver(node, language), name]
        outer = node
        while outer.parent is not None and outer.parent.type in _WRAPPERS and _unwrap(outer.parent) == node:
            outer = outer.parent
        found.append(Definition(".".join(qualified), kind, _leading_comments(outer), outer.end_point[0] + 1))


def _unwrap(node: Any) -> Any:
    """The definition inside `@decorator def`, `export class`, `const f = () => ...`."""
    while node.type in _WRAPPERS:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            declarators = [c for c in node.named_children if c.type == "variable_declarator"]
            if len(declarators) != 1:
                return node
            inner = declarators[0]
        node = inner
    return node


def _classify(node: Any, language: str) -> tuple[str | None, str]:
    """(kind, name) when `node` defines something."""
    kind = _DEFINITIONS[language].get(node.type)
    if kind is not None:
        return kind, _text(node.child_by_field_name("name"))
    if node.type in ("variable_declarator", "public_field_definition") and language != "python":
        value = node.child_by_field_name("value")
        if value is not None and value.type in _JS_FUNCTION_VALUES:
            return ("function" if node.type == "variable_declarator" else "method"), _text(
                node.child_by_field_name("name")
            )
    return None, ""


def _container_name(node: Any, language: str) -> str:
    """The name a node gives what it holds: a definition's own, or a Rust `impl`'s type."""
    if node.type == "impl_item":
        return _base_type(node.child_by_field_name("type"))
    kind, name = _classify(node, language)
    if kind is None:
        return ""
    return ".".join([*_receiver(node, language), name]) if name else ""


# A query is compiled once per grammar, like the grammar itself.
@functools.cache
def _query(language: str) -> Any:
    from tree_sitter import Query

    grammar = parser_for(language).language
    kinds = [*_DEFINITIONS[language], "variable_declarator", "public_field_definition", "impl_item"]
    present = [k for k in kinds if grammar.id_for_node_kind(k, True)]
    return Query(grammar, " ".join(f"({k}) @definition" for k in present))


def _receiver(node: Any, language: str) -> list[str]:
    """A Go method's receiver type (`func (s *Server) Handle` → `Server`)."""
    if language != "go" or node.type != "method_declaration":
        return []
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return []
    for param in receiver.named_children:
        base = _base_type(param.child_by_field_name("type"))
        if base:
            return [base]
    return []


def _base_type(node: Any) -> str:
    """The type's own name: `*Server` → Server, `Foo<T>` → Foo, `crate::a::Foo` → Foo."""
    while node is not None:
        if node.type in ("type_identifier", "identifier", "field_identifier"):
            return _text(node)
        inner = node.child_by_field_name("type") or node.child_by_field_name("name")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("type_arguments", "type_parameters")]
            inner = named[-1] if named else None
        node = inner
    return ""


def _leading_comments(node: Any) -> int:
    """The first line of `node` with the comment block right above it (no blank line between)."""
    parent = node.parent
    if node.type == "type_spec" and parent is not None and parent.named_child_count == 1:
        node = parent  # Go's `type T struct`: the declaration holds the one spec and its comment sits above
    start = node.start_point[0]
    previous = node.prev_named_sibling
    while previous is not None and previous.type in _COMMENTS and previous.end_point[0] >= start - 1:
        start = previous.start_point[0]
        previous = previous.prev_named_sibling
    return int(start) + 1


def _text(node: Any) -> str:
    if node is None or node.text is None:
        return ""
    return str(node.text.decode("utf-8", "replace"))


# A grammar is loaded once per process and never changes: caching it is caching a constant.
@functools.cache
def parser_for(language: str) -> Any:
    try:
        from tree_sitter import Language, Parser
    except ImportError:
        return None
    try:
        handle = _grammar(language)
    except ImportError:
        return None
    return Parser(Language(handle))


def _grammar(language: str) -> Any:
    """The grammar's handle from its wheel (`tree-sitter-python`, ...); ImportError when not installed."""
    import importlib

    if language in ("typescript", "tsx"):
        module: Any = importlib.import_module("tree_sitter_typescript")
        return module.language_tsx() if language == "tsx" else module.language_typescript()
    return importlib.import_module(f"tree_sitter_{language}").language()
