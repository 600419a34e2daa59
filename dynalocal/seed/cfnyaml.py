"""YAML templates with CloudFormation's short-form tags (`!Ref X` -> `{"Ref": "X"}`, `!Sub` -> `Fn::Sub`, ...).

PyYAML (installed with uvicorn[standard]) does the parsing; a safe loader subclass maps every
`!Tag` to its long form, so the rest of the seeding code only sees plain JSON-like data.
"""
from __future__ import annotations

from typing import Any

import yaml

from dynalocal.seed.intrinsics import TemplateError


class _Loader(yaml.SafeLoader):
    """SafeLoader that understands CloudFormation's `!` tags."""


def _long_form(loader: yaml.SafeLoader, suffix: str,
               node: yaml.ScalarNode | yaml.SequenceNode | yaml.MappingNode) -> dict:  # (every kind of node)
    name = suffix if suffix in ("Ref", "Condition") else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":  # !GetAtt Resource.Attribute
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_Loader.add_multi_constructor("!", _long_form)


def load_yaml(text: str) -> Any:
    """Parse a YAML document, turning short-form intrinsic functions into their JSON form."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise TemplateError(f"not valid YAML: {err}") from None
