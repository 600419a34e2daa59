"""DynamoDB's expression language: parsing, validation, evaluation, updates, projections.

The server calls `compile_request(params, operation)` once per request (or per table entry /
transaction action) and uses the returned `Compiled` parts.
"""
from .compile import Compiled, compile_request
from .evaluate import Condition
from .keycond import KeyCondition
from .projection import Projection
from .update import Update, UpdateResult

__all__ = ["compile_request", "Compiled", "Condition", "KeyCondition", "Projection", "Update", "UpdateResult"]
