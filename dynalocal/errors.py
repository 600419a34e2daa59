"""DynamoDB errors as the wire shapes them: `__type`, message member, HTTP status.

Every layer raises these; the server codec turns them into response bodies. Nothing else
may escape a handler (anything that does is a bug and becomes a 500 InternalServerError).
"""
from __future__ import annotations

from typing import Any

CORAL_VALIDATE = "com.amazon.coral.validate#"
CORAL_SERVICE = "com.amazon.coral.service#"
CORAL_AVAILABILITY = "com.amazon.coral.availability#"
DYNAMODB = "com.amazonaws.dynamodb.v20120810#"


class DynamoError(Exception):
    """An error DynamoDB would return. `extra` members are merged into the JSON body."""

    namespace = DYNAMODB
    status = 400
    message_key: str | None = "message"

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    @property
    def code(self) -> str:
        return type(self).__name__

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"__type": self.namespace + self.code}
        if self.message is not None and self.message_key:
            out[self.message_key] = self.message
        out.update(self.extra)
        return out


class ValidationException(DynamoError):
    namespace = CORAL_VALIDATE


class SerializationException(DynamoError):
    namespace = CORAL_SERVICE
    message_key = "Message"


class UnknownOperationException(DynamoError):
    namespace = CORAL_SERVICE


class MissingAuthenticationTokenException(DynamoError):
    namespace = CORAL_SERVICE


class IncompleteSignatureException(DynamoError):
    namespace = CORAL_SERVICE


class InvalidSignatureException(DynamoError):
    namespace = CORAL_SERVICE


class UnrecognizedClientException(DynamoError):
    namespace = CORAL_SERVICE


class AccessDeniedException(DynamoError):
    namespace = CORAL_SERVICE
    message_key = "Message"


class ThrottlingException(DynamoError):
    namespace = CORAL_AVAILABILITY


class ResourceNotFoundException(DynamoError):
    pass


class ResourceInUseException(DynamoError):
    pass


class TableNotFoundException(DynamoError):
    """The backup operations' form of ResourceNotFound (DescribeContinuousBackups, ...)."""


class ConditionalCheckFailedException(DynamoError):
    def __init__(self, item: dict | None = None) -> None:
        extra = {"Item": item} if item is not None else {}
        super().__init__("The conditional request failed", **extra)


class ProvisionedThroughputExceededException(DynamoError):
    pass


class RequestLimitExceeded(DynamoError):
    pass


class LimitExceededException(DynamoError):
    pass


class ItemCollectionSizeLimitExceededException(DynamoError):
    pass


class TransactionCanceledException(DynamoError):
    message_key = "Message"


class TransactionConflictException(DynamoError):
    pass


class TransactionInProgressException(DynamoError):
    message_key = "Message"


class IdempotentParameterMismatchException(DynamoError):
    message_key = "Message"


class InternalServerError(DynamoError):
    status = 500


def invalid(detail: str) -> ValidationException:
    """The common 'One or more parameter values were invalid: ...' ValidationException."""
    return ValidationException("One or more parameter values were invalid: " + detail)
