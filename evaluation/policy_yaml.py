"""Reading a policy's YAML text strictly: the document :mod:`.policy` then validates.

PyYAML's ``SafeLoader`` keeps the last of a key given twice; a policy that says
``upper: 0.03`` and later ``upper: 0.5`` would be judged by the looser one without a word.
This loader refuses it, naming the key and line. It also refuses what would make the
parser itself fail naming nothing: nesting deeper than
:data:`~modelgate.input_limits.MAX_NESTING` levels (PyYAML composes a document
recursively) and an integer too long for Python to read.

Examples
--------
>>> read_yaml("fairness: {default: {}}")
{'fairness': {'default': {}}}
>>> try:
...     read_yaml("metrics: {}\\nmetrics: {}")
... except PolicyError as exc:
...     print(exc)
policy has the key 'metrics' twice (line 2)
"""

from __future__ import annotations

from typing import Any

import yaml

from modelgate.input_limits import MAX_NESTING, shown

__all__ = ["PolicyError", "read_yaml"]


class PolicyError(ValueError):
    """A policy document is malformed; the message names the key path."""


def read_yaml(text: str) -> object:
    """The YAML document in ``text``, with every mapping key given once.

    Raises
    ------
    PolicyError
        If the text is not valid YAML, a mapping has a key twice, the document nests deeper
        than ``MAX_NESTING`` levels or holds an integer of over 4,300 digits.
    """
    try:
        _check_nesting(text)
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy is not valid YAML: {exc}") from exc


def _check_nesting(text: str) -> None:
    """Refuse nesting deeper than ``MAX_NESTING`` from the event stream, before the
    (recursive) composer sees it; the event parser itself does not recurse."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                mark = event.start_mark  # the parser sets it; its type says it may be missing
                line = f" (line {mark.line + 1})" if mark is not None else ""
                raise PolicyError(f"policy nests mappings and lists deeper than {MAX_NESTING} "
                                  f"levels{line}; a policy needs five")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys instead of keeping the last."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node)
        if key in result:
            line = key_node.start_mark.line + 1
            raise PolicyError(f"policy has the key {shown(key)} twice (line {line})")
        result[key] = loader.construct_object(value_node, deep=True)
    return result


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    try:
        value: int = yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:  # Python refuses int() of text over 4,300 digits
        raise PolicyError(f"policy has an integer of {len(node.value):,} characters (line "
                          f"{node.start_mark.line + 1}); expected a number that fits a float") from None
    return value


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
