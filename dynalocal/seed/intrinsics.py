"""CloudFormation intrinsic functions that can be resolved without a stack, and a clear error for the rest.

Resolved: `Ref` to a parameter with a `Default` or to a pseudo parameter with a fixed local value,
`Fn::Sub`, `Fn::Join`, `Fn::Select`, `Fn::FindInMap`, `Fn::Split`. Anything else (`Fn::GetAtt`,
`Fn::ImportValue`, `Fn::If`, a `Ref` to another resource, ...) needs a deployed stack: error.
"""
from __future__ import annotations

import re
from typing import Any

from dynalocal.storage.database import ACCOUNT, REGION

PSEUDO = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
          "AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": None}
SUB_VARIABLE = re.compile(r"\$\{(!?)([^}]*)\}")


class TemplateError(ValueError):
    """A template value dynalocal cannot resolve locally; the message says where and why."""


class Resolver:
    """Resolves the intrinsic functions of one template's values."""

    def __init__(self, template: dict) -> None:
        self.parameters = template.get("Parameters") or {}
        self.mappings = template.get("Mappings") or {}

    def resolve(self, value: Any, where: str) -> Any:
        """`value` with every intrinsic function replaced by its result (AWS::NoValue drops the member)."""
        if isinstance(value, list):
            out = [self.resolve(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return [v for v in out if v is not None]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (name, arg), = value.items()
            if name == "Ref" or name.startswith("Fn::"):
                return self._function(name, arg, where)
        members = {k: self.resolve(v, f"{where}.{k}") for k, v in value.items()}
        return {k: v for k, v in members.items() if v is not None}

    def _function(self, name: str, arg: Any, where: str) -> Any:
        if name == "Ref":
            return self._ref(arg, where)
        method = getattr(self, "_" + name[4:].lower(), None)
        if method is None:
            raise TemplateError(f"{where} uses {name}, which needs a deployed stack and cannot be resolved "
                                "locally; replace it with a literal value")
        return method(self.resolve(arg, where), where)

    def _ref(self, name: Any, where: str) -> Any:
        if name in PSEUDO:
            return PSEUDO[name]
        param = self.parameters.get(name)
        if isinstance(param, dict) and "Default" in param:
            return param["Default"]
        if param is not None:
            raise TemplateError(f"{where} refers to parameter {name}, which has no Default; give it one")
        raise TemplateError(f"{where} uses Ref {name}, which cannot be resolved locally "
                            "(only parameters with a Default and AWS::Region/AccountId/Partition/URLSuffix can)")

    def _sub(self, arg: Any, where: str) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1]) if isinstance(arg, list) \
            and len(arg) == 2 else (None, None)
        if not isinstance(text, str) or not isinstance(variables, dict):
            raise TemplateError(f"{where}: Fn::Sub takes a string or [string, {{variables}}]")

        def value(match: re.Match) -> str:
            if match.group(1):  # ${!Literal} is written as ${Literal}
                return "${" + match.group(2) + "}"
            var = match.group(2)
            if var in variables:
                return str(variables[var])
            if "." in var:
                raise TemplateError(f"{where} uses ${{{var}}} (an attribute, Fn::GetAtt), which cannot be "
                                    "resolved locally")
            return str(self._ref(var, where))

        return SUB_VARIABLE.sub(value, text)

    def _join(self, arg: Any, where: str) -> str:
        if not (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list)):
            raise TemplateError(f"{where}: Fn::Join takes [delimiter, [values]]")
        return str(arg[0]).join(str(v) for v in arg[1])

    def _select(self, arg: Any, where: str) -> Any:
        if not (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list)):
            raise TemplateError(f"{where}: Fn::Select takes [index, [values]]")
        index = int(arg[0])
        if not 0 <= index < len(arg[1]):
            raise TemplateError(f"{where}: Fn::Select index {index} is out of range")
        return arg[1][index]

    def _split(self, arg: Any, where: str) -> list:
        if not (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], str)):
            raise TemplateError(f"{where}: Fn::Split takes [delimiter, string]")
        return arg[1].split(arg[0])

    def _findinmap(self, arg: Any, where: str) -> Any:
        if not (isinstance(arg, list) and len(arg) >= 3):
            raise TemplateError(f"{where}: Fn::FindInMap takes [map, top-level key, second-level key]")
        try:
            return self.mappings[arg[0]][arg[1]][arg[2]]
        except (KeyError, TypeError):
            raise TemplateError(f"{where}: Fn::FindInMap finds no {arg[0]}.{arg[1]}.{arg[2]} in Mappings") from None
