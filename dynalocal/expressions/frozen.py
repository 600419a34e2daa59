"""An immutable, slotted value-class base: what `@dataclass(slots=True, frozen=True)` gave, cheaply.

Creating dataclasses at import time (generating and exec-ing their methods) cost ~10 ms of server
startup for the expression AST and tokens alone; these plain classes cost next to nothing.
"""
from __future__ import annotations

set_field = object.__setattr__  # how subclasses' __init__ store their fields


class FrozenInstanceError(AttributeError):
    """Raised on assignment to a field: instances are immutable, as frozen dataclasses are."""


class Frozen:
    """Base class: fields are the subclass's __slots__; equality, hash and repr as a dataclass's."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple:
        return tuple([getattr(self, name) for name in self.__slots__])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({fields})"
