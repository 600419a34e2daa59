"""Background operations (bulk loads, exports, imports): their records, idempotency tokens, listing,
persistence and the driver that runs their work in slices on the event loop.

A job's work is a generator: each `next` does one slice (a few thousand items) synchronously and
yields the seconds to pause before the next (0: just let other requests in). The driver runs it
as an asyncio task on the server's loop, so requests are served between slices and each slice is
atomic with respect to them, as a request is (engine.dispatch). With `--data-dir` each job's
record is kept in `<data-dir>/jobs/<id>.json`, written atomically when the job starts and ends; a
job still running when the server stopped is reported FAILED at the next start (its items written
before the stop are kept), never resumed (docs/behaviour/bulk.md).
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from dynalocal.engine.context import Context
from dynalocal.errors import DynamoError, ValidationException
from dynalocal.journal.s3dir import S3Error

log = logging.getLogger("dynalocal")

BULK, EXPORT, IMPORT = "bulk", "export", "import"
STATUS = {BULK: "BulkOperationStatus", EXPORT: "ExportStatus", IMPORT: "ImportStatus"}
ARN = {BULK: "BulkOperationArn", EXPORT: "ExportArn", IMPORT: "ImportArn"}
RUNNING = frozenset(("IN_PROGRESS", "CANCELLING"))
TOKEN_HOURS = 8  # a ClientToken names the same operation for 8 hours (docs/behaviour/bulk.md)
INTERRUPTED = "The server stopped while this operation ran; items written before the stop are kept"


class Job:
    """One background operation: its wire description (updated in place as it runs) and bookkeeping."""

    __slots__ = ("kind", "id", "token", "params", "scope", "desc", "cancel")

    def __init__(self, kind: str, job_id: str, token: str | None, params: bytes, scope: str, desc: dict) -> None:
        self.kind = kind
        self.id = job_id
        self.token = token  # the ClientToken it was started with
        self.params = params  # the request's canonical JSON without the token (idempotency)
        self.scope = scope  # the caller's scope (isolation): jobs are listed within it
        self.desc = desc
        self.cancel = False  # CancelBulkOperation asked; the work stops at its next slice

    @classmethod
    def started(cls, kind: str, job_id: str, body: dict, scope: str, desc: dict) -> Job:
        """A job a request starts now: its ClientToken (also put in `desc`) and parameters kept for idempotency."""
        token = body.get("ClientToken")
        if token:
            desc["ClientToken"] = token
        return cls(kind, job_id, token, fingerprint(body), scope, desc)

    @property
    def arn(self) -> str:
        return self.desc[ARN[self.kind]]

    @property
    def status(self) -> str:
        return self.desc[STATUS[self.kind]]

    def finish(self, status: str, code: str | None = None, message: str | None = None) -> None:
        """Set a terminal status (with FailureCode/FailureMessage when given) and EndTime."""
        self.desc[STATUS[self.kind]] = status
        self.desc["EndTime"] = time.time()
        if code is not None:
            self.desc["FailureCode"] = code
            self.desc["FailureMessage"] = message


def new_id(now: float) -> str:
    """An export's or import's id: its start in milliseconds, then 8 random hex digits."""
    return f"{int(now * 1000):014d}-{uuid.uuid4().hex[:8]}"


def fingerprint(body: dict) -> bytes:
    """A request's parameters as canonical JSON without its ClientToken (what idempotency compares)."""
    return orjson.dumps({k: v for k, v in body.items() if k != "ClientToken"}, option=orjson.OPT_SORT_KEYS)


def _state(ctx: Context) -> dict[str, Any]:
    state = ctx.jobs
    if not state:
        state.update(all=_load(ctx), tasks=set())
    return state


def jobs(ctx: Context) -> dict[str, Job]:
    """Every job this server knows (with `--data-dir`, those of earlier runs too), by ARN."""
    return _state(ctx)["all"]


def find(ctx: Context, kind: str, arn: str, scope: str, missing: DynamoError) -> Job:
    """The job of that kind and ARN visible to a caller of `scope`; `missing` is raised when there is none."""
    job = jobs(ctx).get(arn)
    if job is None or job.kind != kind or job.scope != scope:
        raise missing
    return job


def same_token(ctx: Context, kind: str, body: dict, scope: str, mismatch: DynamoError) -> Job | None:
    """The job an earlier request with this request's ClientToken started (within 8 hours), or None;
    `mismatch` is raised when that request had other parameters."""
    token = body.get("ClientToken")
    if not token:
        return None
    params = fingerprint(body)
    horizon = time.time() - TOKEN_HOURS * 3600
    for job in jobs(ctx).values():
        if job.kind == kind and job.token == token and job.scope == scope and job.desc["StartTime"] >= horizon:
            if job.params != params:
                raise mismatch
            return job
    return None


def listed(ctx: Context, kind: str, scope: str, table_arn: str | None = None) -> list[Job]:
    """The jobs of a kind a caller sees (of one table when `table_arn`), newest first."""
    found = [j for j in jobs(ctx).values() if j.kind == kind and j.scope == scope
             and (table_arn is None or j.desc.get("TableArn") == table_arn)]
    found.sort(key=lambda j: j.desc["StartTime"], reverse=True)
    return found


def page(items: list[Job], limit: int, token: str | None, width: int = 16) -> tuple[list[Job], str | None]:
    """One page of a listing and the NextToken of the next (the hex of its first index, `width` digits)."""
    start = 0
    if token is not None:
        try:
            start = int(token, 16)
        except ValueError:
            raise ValidationException("Invalid NextToken") from None
    end = start + limit
    return items[start:end], (f"{end:0{width}x}" if end < len(items) else None)


def start(ctx: Context, job: Job, work: Iterator[float]) -> None:
    """Register `job`, save it, and run its work: as a task on the running loop (the server), else at once."""
    jobs(ctx)[job.arn] = job
    save(ctx, job)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # offline use (tests calling handlers directly): run to the end now
        for _ in _slices(ctx, job, work):
            pass
        return
    tasks: set = _state(ctx)["tasks"]
    task = loop.create_task(_drive(ctx, job, work))
    tasks.add(task)
    task.add_done_callback(tasks.discard)


def background(ctx: Context, work: Iterator[float]) -> None:
    """Run work that has no job record (a restore's load) the same way: slices on the running loop,
    stopped with the jobs at shutdown; offline, to the end at once. The work handles its own failures."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        for _ in work:
            pass
        return
    tasks: set = _state(ctx)["tasks"]
    task = loop.create_task(_run(ctx, work))
    tasks.add(task)
    task.add_done_callback(tasks.discard)


async def _run(ctx: Context, work: Iterator[float]) -> None:
    for pause in work:
        if ctx.capacity.due:
            ctx.capacity.settle()
        await asyncio.sleep(pause)


async def stop(ctx: Context) -> None:
    """At shutdown: stop the running jobs between slices (their records stay IN_PROGRESS on disk, so the
    next start reports them interrupted)."""
    tasks: set[asyncio.Task] = ctx.jobs.get("tasks") or set()
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def _drive(ctx: Context, job: Job, work: Iterator[float]) -> None:
    for pause in _slices(ctx, job, work):
        await asyncio.sleep(pause)


def _slices(ctx: Context, job: Job, work: Iterator[float]) -> Iterator[float]:
    """Run the work slice by slice (capacity layouts settle between slices, as between requests);
    an S3 problem or a bug fails the job; its record is saved at the end."""
    try:
        while True:
            if ctx.capacity.due:
                ctx.capacity.settle()
            try:
                pause = next(work)
            except StopIteration:
                break
            yield pause
    except S3Error as err:
        job.finish("FAILED", err.code, err.message)
    except DynamoError as err:
        job.finish("FAILED", err.code, err.message or err.code)
    except Exception as err:  # a bug: the job fails, the server goes on
        log.exception("background %s %s failed", job.kind, job.arn)
        job.finish("FAILED", "INTERNAL_ERROR", f"Internal error: {err}")
    if job.status in RUNNING:  # the work ended without saying how
        job.finish("CANCELLED" if job.cancel else "FAILED", None if job.cancel else "INTERNAL_ERROR",
                   None if job.cancel else "The operation ended unexpectedly")
    save(ctx, job)


def _directory(ctx: Context) -> Path | None:
    data = ctx.settings.data_dir
    return Path(data) / "jobs" if data else None


def save(ctx: Context, job: Job) -> None:
    """Persist the job's record (with `--data-dir`), atomically."""
    directory = _directory(ctx)
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    record = {"kind": job.kind, "id": job.id, "token": job.token, "params": job.params.decode(),
              "scope": job.scope, "desc": job.desc}
    path = directory / f"{job.id}.json"
    temporary = directory / f".tmp-{job.id}.json"
    temporary.write_bytes(orjson.dumps(record))
    os.replace(temporary, path)


def _load(ctx: Context) -> dict[str, Job]:
    """The jobs of earlier runs; those that were running are reported FAILED (or CANCELLED)."""
    directory = _directory(ctx)
    found: dict[str, Job] = {}
    if directory is None or not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.json")):
        if path.name.startswith(".tmp-"):
            continue
        try:
            record = orjson.loads(path.read_bytes())
            job = Job(record["kind"], record["id"], record["token"], record["params"].encode(), record["scope"],
                      record["desc"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
            log.warning("unreadable job record %s skipped", path)
            continue
        found[job.arn] = job
        if job.status in RUNNING:
            if job.status == "CANCELLING":
                job.finish("CANCELLED", "CANCELLED", INTERRUPTED)
            else:
                job.finish("FAILED", "INTERRUPTED", INTERRUPTED)
            save(ctx, job)
    return found
