"""Reading YAML: a campaign config, a label-import or results mapping, a -p KEY=VALUE.
One reader, so every one of them refuses a folder, a missing file, a syntax error and a
list in the same one line, and none can be made to exhaust memory or the stack.

Settings files are shared, so they are read as untrusted: a 360-byte "billion laughs"
(nine levels of ten aliases) is a few nodes to parse but a thousand million once
anything walks it (pydantic, an error message's repr), and 5,000 nested brackets
overflowed the composer's recursion. Depth is counted on the parser's events, before
the composer recurses; the expanded size on the node graph, before anything is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from engine.core.errors import ConfigError, yaml_problem

#: Deepest nesting of lists and mappings: settings files nest three or four levels.
MAX_DEPTH = 64
#: Most values once every alias is expanded: a grid of many cells stays far below it.
MAX_NODES = 100_000
#: Largest settings file, read whole: a config is a few kilobytes.
MAX_BYTES = 4 * 1024 * 1024


class YamlBombError(ConfigError):
    """A YAML text that would expand beyond the bounds above."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose document is refused when nested deeper than MAX_DEPTH or larger
    than MAX_NODES once aliases are expanded; `what` names the text in the refusal."""

    what = "YAML text"

    def get_single_node(self):  # type: ignore[no-untyped-def]
        node = super().get_single_node()
        if node is not None:
            _check_size(node, self.what)
        return node


def _check_size(root: yaml.Node, what: str) -> None:
    """Expanded size and depth of `root`, counted once per distinct node (so counting
    costs what parsing cost), without recursion (the depth is what is being checked)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        kids = _children(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if depth[key] > MAX_DEPTH:
                raise _too_deep(what)
            if size[key] > MAX_NODES:
                raise YamlBombError(
                    f"{what} expands to more than {MAX_NODES:,} values once its aliases (*name) "
                    "are expanded; write the values out, or check whether the file was "
                    "made to exhaust memory (a 'billion laughs')"
                )
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlBombError(
                f"{what} holds an alias (*name) inside the value it names, which never ends once "
                "expanded; write the value out"
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)


def _too_deep(what: str) -> YamlBombError:
    return YamlBombError(
        f"{what} nests lists or mappings more than {MAX_DEPTH} levels deep, where settings "
        "nest a few; check the brackets, or whether the file was made to exhaust the stack"
    )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _compose_depth_guard(text: str, what: str) -> None:
    """Refuse deep nesting before the composer recurses into it: PyYAML composes nested
    collections recursively, and 5,000 brackets overflowed Python's stack. The events
    come from the parser, which keeps its own stack and does not recurse."""
    level = 0
    for event in yaml.parse(text, Loader=_BoundedLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            level += 1
            if level > MAX_DEPTH:
                raise _too_deep(what)
        elif isinstance(event, yaml.CollectionEndEvent):
            level -= 1


def load_text(text: str, what: str = "YAML text") -> Any:
    """The value of the YAML `text`, read safely and within the bounds above; YAMLError
    for a syntax error, YamlBombError (a ConfigError naming `what`) beyond a bound."""
    _compose_depth_guard(text, what)
    loader = _BoundedLoader(text)
    loader.what = what
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_mapping(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """The mapping of settings in the YAML file at `path` ({} for an empty file); `what`
    names the file in the refusals."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder; give the path of a YAML file")
    if not path.is_file():
        raise ConfigError(f"{what} {path} does not exist")
    if (n := path.stat().st_size) > MAX_BYTES:
        raise ConfigError(
            f"{what} {path} is {n:,} bytes, expected at most {MAX_BYTES:,}; a settings "
            "file is a few kilobytes: check that this is the file you meant"
        )
    try:
        data = load_text(path.read_text(encoding="utf-8"), f"{what} {path}") or {}
    except UnicodeDecodeError:
        raise ConfigError(
            f"{what} {path} is not UTF-8 text (a binary file, or text in another encoding); "
            "give a YAML file saved as UTF-8"
        ) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{what} {path} is {yaml_problem(e)}") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{what} {path} holds a {type(data).__name__}, expected a mapping of settings"
        )
    return data
