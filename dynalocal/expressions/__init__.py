"""DynamoDB's expression language: parsing, validation, evaluation, updates, projections.

The server calls `compile_request(params, operation)` once per request (or per table entry /
transaction action) and uses the returned `Compiled` parts.
"""
from dynalocal.expressions.compile import Compiled, compile_request
from dynalocal.expressions.evaluate import Condition
from dynalocal.expressions.keycond import KeyCondition
from dynalocal.expressions.projection import Projection
from dynalocal.expressions.update import Update, UpdateResult

__all__ = ["compile_request", "Compiled", "Condition", "KeyCondition", "Projection", "Update", "UpdateResult"]
