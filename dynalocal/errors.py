"""DynamoDB errors as the wire shapes them: `__type`, message member, HTTP status.

Every layer raises these; `error_body` turns them into response bodies. Nothing else
may escape a handler (anything that does is a bug and becomes a 500 InternalServerError).
"""
from __future__ import annotations

from typing import Any

import orjson

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


class TableAlreadyExistsException(DynamoError):
    """A restore's target table exists already."""


class TableInUseException(DynamoError):
    """A backup or restore of a table that is being created, updated or deleted."""


class BackupNotFoundException(DynamoError):
    pass


class BackupInUseException(DynamoError):
    """A backup still CREATING (delete) or a backup operation already running on it."""


class ContinuousBackupsUnavailableException(DynamoError):
    pass


class PointInTimeRecoveryUnavailableException(DynamoError):
    """Export or point-in-time restore of a table without point-in-time recovery."""


class InvalidRestoreTimeException(DynamoError):
    pass


class PolicyNotFoundException(DynamoError):
    """No resource policy, or not the revision ExpectedRevisionId names."""


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


class ServiceUnavailable(DynamoError):
    """The server cannot answer yet (its data directory is loading): HTTP 503, which every SDK retries."""

    status = 503


class RequestTimeoutException(DynamoError):
    """A request that was not received in time (HTTP 408)."""

    status = 408


class DuplicateItemException(DynamoError):
    """PartiQL INSERT of an item whose key exists."""


class ExpiredIteratorException(DynamoError):
    """DynamoDB Streams: a shard iterator older than its lifetime."""


class TrimmedDataAccessException(DynamoError):
    """DynamoDB Streams: a read before the trim horizon of a shard."""


class InvalidExportTimeException(DynamoError):
    """ExportTableToPointInTime: an ExportTime outside the recoverable window."""


class ExportNotFoundException(DynamoError):
    """DescribeExport of an unknown ExportArn."""


class ExportConflictException(DynamoError):
    """ExportTableToPointInTime: a ClientToken reused with other parameters."""


class ImportConflictException(DynamoError):
    """ImportTable: a ClientToken reused with other parameters."""


class ImportNotFoundException(DynamoError):
    """DescribeImport of an unknown ImportArn."""


def invalid(detail: str) -> ValidationException:
    """The common 'One or more parameter values were invalid: ...' ValidationException."""
    return ValidationException("One or more parameter values were invalid: " + detail)


def malformed_statement(detail: str) -> ValidationException:
    """PartiQL's syntax-error form."""
    return ValidationException(f"Statement wasn't well formed, can't be processed: {detail}")


def transaction_canceled(reasons: list[dict]) -> TransactionCanceledException:
    """A cancelled transaction, with one reason per action (`{"Code": ..., "Message"?: ..., "Item"?: ...}`)."""
    codes = ", ".join(r["Code"] for r in reasons)
    return TransactionCanceledException(
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        CancellationReasons=reasons)


def error_body(err: DynamoError) -> bytes:
    """An error's JSON response body."""
    return orjson.dumps(err.body())


def access_denied_body(message: str) -> bytes:
    """The body dynalocal's own endpoints refuse with (an AccessDeniedException with a lower-case `message`)."""
    return orjson.dumps({"__type": DYNAMODB + "AccessDeniedException", "message": message})
