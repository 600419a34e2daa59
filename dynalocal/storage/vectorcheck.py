"""Write-time checks of items on a table with vector indexes: the vector's type, element types,
f32 range and size, and the SearchSchema attributes' types (docs/behaviour/vectors.md §3).

Apart from storage.vectors so that checking (imported with storage.index at start-up) does not load numpy.
"""
from __future__ import annotations

import math
from typing import Any

from dynalocal.errors import ValidationException, invalid

F32_MAX = 3.4028234663852886e38  # the largest finite float32


def check_item(table: Any, item: dict) -> None:
    """Reject a written item whose vector (size, element type, f32 range) or search-schema
    attribute (type, empty value) does not fit one of the table's vector indexes."""
    for index in table.vectors.values():
        av = item.get(index.attribute)
        if av is not None:
            _check_vector(index, av)
        for name, kind in index.typed:
            value = item.get(name)
            if value is None or name in table.schema.name_set:
                continue
            ((actual, plain),) = value.items()
            if actual != kind:
                raise invalid(f"Type mismatch for Index Key {name} Expected: {kind} Actual: {actual} "
                              f"IndexName: {index.name}")
            if plain == "" and name == index.hash:
                raise ValidationException(
                    "One or more parameter values are not valid. A value specified for a secondary index key is not "
                    "supported. The AttributeValue for a key attribute cannot contain an empty "
                    f"{'string' if kind == 'S' else 'binary'} value. IndexName: {index.name}, IndexKey: {name}")


def _check_vector(index: Any, av: dict) -> None:
    """The write-time checks of a vector value (docs/behaviour/vectors.md §3)."""
    ((kind, elements),) = av.items()
    name = index.attribute
    if kind != "L":
        raise invalid(f"Invalid type for parameter {name}, Expected: L, Actual: {kind}. IndexName: {index.name}")
    for i, element in enumerate(elements):
        ((kind, value),) = element.items()
        if kind != "N":
            raise invalid(f"Invalid type for parameter {name}[{i}], Expected: N, Actual: {kind}. "
                          f"IndexName: {index.name}")
        number = float(value)
        if not math.isfinite(number) or abs(number) > F32_MAX:
            raise invalid(f"Invalid value for parameter {name}[{i}]: the value must fit in a 32-bit floating-point "
                          f"number. IndexName: {index.name}")
    if len(elements) != index.dimensions:
        raise invalid(f"Invalid size for parameter {name}, Expected: {index.dimensions}, Actual: {len(elements)}. "
                      f"IndexName: {index.name}")
