"""Reading a policy's YAML text strictly: the document :mod:`.policy` then validates.

PyYAML's ``SafeLoader`` keeps the last of a key given twice; a policy that says
``upper: 0.03`` and later ``upper: 0.5`` would be judged by the looser one without a word.
This loader refuses it, naming the key and line.

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

__all__ = ["PolicyError", "read_yaml"]


class PolicyError(ValueError):
    """A policy document is malformed; the message names the key path."""


def read_yaml(text: str) -> object:
    """The YAML document in ``text``, with every mapping key given once.

    Raises
    ------
    PolicyError
        If the text is not valid YAML or a mapping has a key twice.
    """
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy is not valid YAML: {exc}") from exc


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys instead of keeping the last."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node)
        if key in result:
            line = key_node.start_mark.line + 1
            raise PolicyError(f"policy has the key {key!r} twice (line {line})")
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
