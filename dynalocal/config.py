"""The server's options, each defined once: `Settings` holds their values and defaults, `OPTIONS`
how each is spelled (command line, DynamoDB Local's flag, environment variable) and what it means.

The command line (cli/arguments.py), its --help, the README's options table and the test harness
are generated from, or checked against, these two. Precedence when the command line is parsed:
command-line flag > DYNALOCAL_* environment variable > the default here. Sits at the bottom of
the package beside values/ and errors.py: it imports nothing from dynalocal.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

LOCAL_ORIGINS = ("http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*")  # CORS: pages of this machine
ENV_PREFIX = "DYNALOCAL_"
CREDENTIALS_ENV = "DYNALOCAL_CREDENTIALS"  # KEY:SECRET[:ACCOUNT],... (the keys themselves; see http.plugins.auth)
MIB = 1024 * 1024


@dataclass
class Settings:
    """The server's options (OPTIONS says what each means); every default is here and only here."""

    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    throttling: str = "keys"
    ttl_interval: float = 1.0
    burst_seconds: float = 300.0
    partition_burst_seconds: float = 5.0
    capacity_model: str = "adaptive"
    data_dir: str | None = None
    sync: str = "batch"
    sync_interval: float = 0.002  # seconds (the command line counts milliseconds)
    snapshot_bytes: int = 64 * MIB  # (the command line counts MiB)
    allow_reset: bool = True
    admin_token: str | None = None
    request_timeout: float = 30.0
    keep_alive_timeout: float = 5.0
    allowed_hosts: tuple[str, ...] = ()
    init: tuple[str, ...] = ()
    auth: str = "relaxed"
    credentials_file: str | None = None
    isolation: str = "shared"
    cors_origins: tuple[str, ...] = LOCAL_ORIGINS
    transient_delay: float = 0.0
    pitr_lag_seconds: float = 300.0  # DynamoDB's LatestRestorableDateTime is about five minutes before now
    vector_index_lag: float = 0.0  # seconds (the command line counts milliseconds)
    in_memory: bool = False
    s3_dir: str | None = None
    huge_pages: bool = True
    # Not on the command line:
    credentials: dict = field(default_factory=dict)  # access key -> (secret, account): CREDENTIALS_ENV + the file
    shutdown_timeout: float = 10.0  # seconds a graceful stop waits for open connections


DEFAULTS = Settings()


class Option(NamedTuple):
    """One command-line option: the Settings field it sets, its spellings and its meaning.

    `form` says how the flag's value becomes the field's: "" as is (a list field: comma-separated),
    "ms" / "MiB" (the field counts seconds / bytes), "not" (a flag that turns the field off),
    "repeat" (a flag given once per value; comma-separated in the environment)."""

    field: str
    flag: str
    help: str  # Markdown, as the README shows it (--help strips the marks)
    choices: tuple[str, ...] = ()
    form: str = ""
    local: str = ""  # DynamoDB Local's spelling of the flag
    local_value: str | None = None  # the value DynamoDB Local's flag stands for when it takes none
    env: str = ""  # the environment variable, when not DYNALOCAL_<FLAG>
    metavar: str = ""

    @property
    def dest(self) -> str:
        """The flag's name in an argparse Namespace (--no-reset: no_reset)."""
        return self.flag[2:].replace("-", "_")

    @property
    def env_name(self) -> str:
        return self.env or ENV_PREFIX + self.dest.upper()

    @property
    def is_flag(self) -> bool:
        """Whether it takes no value (a switch)."""
        return isinstance(getattr(DEFAULTS, self.field), bool)

    @property
    def default(self) -> Any:
        """The default in the flag's own terms (derived from Settings)."""
        value = getattr(DEFAULTS, self.field)
        if self.form == "ms":
            return value * 1000
        if self.form == "MiB":
            return value / MIB
        if self.form == "not":
            return not value
        if self.form == "repeat":
            return list(value)
        if isinstance(value, tuple):
            return ",".join(value)
        return value

    def to_field(self, value: Any) -> Any:
        """The Settings value of the flag's value `value` (as parsed: numbers are numbers)."""
        if self.form == "ms":
            return value / 1000
        if self.form == "MiB":
            return int(value * MIB)
        if self.form == "not":
            return not value
        if self.form == "repeat":
            return tuple(value)
        if isinstance(getattr(DEFAULTS, self.field), tuple):
            return words(value)
        return value


def words(text: str | None) -> tuple[str, ...]:
    """A list option's value: names separated by commas (or spaces)."""
    return tuple(text.replace(",", " ").split()) if text else ()


# The command line, in --help's and the README's order.
OPTIONS: tuple[Option, ...] = (
    Option("host", "--host", "Address to bind. Only loopback unless you say otherwise (`0.0.0.0` in the container)."),
    Option("port", "--port", "Port to listen on.", local="-port"),
    Option("log_level", "--log-level",
           "How much the server logs: `critical`, `error`, `warning`, `info` or `debug`.",
           choices=("critical", "error", "warning", "info", "debug")),
    Option("throttling", "--throttling", "`keys`: refuse key-design throttles (a partition's or key range's "
           "ceiling, table or GSI) as DynamoDB does, and only record capacity-setting ones (provisioned rates, "
           "on-demand maximums and scaling, account quota) as would-be throttles; `enforce`: refuse both; "
           "`report`: refuse nothing, record everything; `off`. Per table: the tag `dynalocal:throttling=<mode>`.",
           choices=("keys", "enforce", "report", "off")),
    Option("ttl_interval", "--ttl-interval",
           "Seconds between sweeps that delete items whose TTL attribute has expired."),
    Option("burst_seconds", "--burst-seconds", "Seconds of unused provisioned capacity kept as burst capacity "
           "(`0`: none, the strict CI setting)."),
    Option("partition_burst_seconds", "--partition-burst-seconds", "Seconds of a partition's 3000 RCU / 1000 WCU "
           "ceiling kept as burst, so short bursts above it pass (`0`: none)."),
    Option("capacity_model", "--capacity-model", "`adaptive`: DynamoDB as it runs today (table-level capacity, "
           "partition ceilings, on-demand growth); `classic`: each partition gets a fixed 1/N share of the "
           "provisioned rate (also per table with the tag `dynalocal:capacity-model=classic`).",
           choices=("adaptive", "classic")),
    Option("data_dir", "--data-dir", "Persist tables and items in this directory (write-ahead log plus snapshots); "
           "without it everything is in memory.", local="-dbPath", metavar="DIR"),
    Option("sync", "--sync", "When the log is fsynced. `always`: as soon as a write is pending. `batch`: the writes "
           "at hand share one fsync, as soon as no further one is (a lone write at once; under continuous load, one "
           "per `--sync-interval-ms`). `none`: never (survives a killed process, not a crashed machine). Writes are "
           "answered only once durable.", choices=("always", "batch", "none")),
    Option("sync_interval", "--sync-interval-ms", "`batch` mode: the longest a group of writes keeps gathering "
           "while more keep arriving.", form="ms"),
    Option("snapshot_bytes", "--snapshot-mb", "Take a snapshot (and drop the generation before the previous one) "
           "once the log has grown this many MiB, or half the live data's DynamoDB size if larger (and at "
           "shutdown); earlier when the log mostly holds deleted data (see [Durability](#durability)).",
           form="MiB"),
    Option("allow_reset", "--no-reset", "Disable `POST /_dynalocal/reset` (it then answers 403).", form="not"),
    Option("admin_token", "--admin-token", "Require this token for the admin endpoints other than health and "
           "metrics; needed to use them at all on a non-loopback bind (see [Security](#security)).",
           metavar="TOKEN"),
    Option("request_timeout", "--request-timeout",
           "Seconds a client has to send a whole request; a stalled one gets 408 and is disconnected."),
    Option("keep_alive_timeout", "--keep-alive-timeout", "Seconds an idle keep-alive connection stays open."),
    Option("allowed_hosts", "--allowed-hosts", "Comma-separated `Host` names served besides `localhost` and IP "
           "addresses while bound to loopback (e.g. a compose service name; `*` allows any). See \"Host check\" "
           "below.", metavar="NAMES"),
    Option("init", "--init", "At start, create the tables (and load the items) of a seed file: a JSON list of "
           "CreateTable requests, each with optional `Items` (DynamoDB JSON) and `TimeToLiveSpecification`, or a "
           "CloudFormation/SAM template (JSON or YAML) whose `AWS::DynamoDB::Table` / `AWS::Serverless::SimpleTable` "
           "resources become tables. Repeatable (comma-separated in the environment). Seeding is never throttled; "
           "tables that exist already (from `--data-dir`) are left as they are. See [Seed data](#seed-data).",
           form="repeat", metavar="FILE"),
    Option("auth", "--auth", "`relaxed`: requests must carry a well-formed SigV4 `Authorization` header (every SDK "
           "signs), not checked. `verify`: signatures are checked against `DYNALOCAL_CREDENTIALS` / `--credentials`. "
           "`none`: unsigned requests are served too. See "
           "[Authentication](#authentication-regions-and-accounts).", choices=("relaxed", "verify", "none")),
    Option("credentials_file", "--credentials", "File of `KEY:SECRET[:ACCOUNT]` lines for `--auth verify` and "
           "`--isolation account` (as `DYNALOCAL_CREDENTIALS`, which takes them comma-separated).",
           env="DYNALOCAL_CREDENTIALS_FILE", metavar="FILE"),
    Option("isolation", "--isolation", "`shared`: one database for every client (DynamoDB Local's `-sharedDb`). "
           "`region`: tables per region, as on AWS. `account`: tables per account and region.",
           choices=("shared", "region", "account"), local="-sharedDb", local_value="shared"),
    Option("cors_origins", "--cors-origins", "Comma-separated origins that browsers may call from "
           "(`http://localhost:*` style patterns), or `*`. The default: this machine's pages.",
           local="-cors", metavar="LIST"),
    Option("transient_delay", "--transient-delay", "Seconds tables stay `CREATING` / `UPDATING` / `DELETING`, as "
           "on AWS, so code that forgets its waiters fails locally too (`-delayTransientStatuses` sets 1).",
           local="-delayTransientStatuses", local_value="1", metavar="SECONDS"),
    Option("pitr_lag_seconds", "--pitr-lag-seconds", "How far behind now point-in-time recovery's "
           "`LatestRestorableDateTime` is (about five minutes on AWS); `0` lets tests restore to the present.",
           metavar="SECONDS"),
    Option("vector_index_lag", "--vector-index-lag-ms", "Milliseconds before a write is visible to `SearchVectors` "
           "(DynamoDB's vector indexes are eventually consistent); 0: at once.", form="ms"),
    Option("in_memory", "--in-memory", "Keep everything in memory, as without `--data-dir` anyway (DynamoDB "
           "Local's `-inMemory`); refused together with `--data-dir`.", local="-inMemory"),
    Option("s3_dir", "--s3-dir", "A local stand-in for S3 used by bulk loads, exports and imports: bucket `B` is the "
           "directory `DIR/B/`, a key prefix the paths below it. See [The S3 stand-in](#the-s3-stand-in---s3-dir).",
           metavar="DIR"),
    Option("huge_pages", "--no-huge-pages", "Leave the heap on small pages. By default a large heap (tables of "
           "many items) is backed with 2 MiB pages once it has grown (Linux 6.1+), for fewer TLB misses on reads; "
           "freed heap pages are returned to the system either way. See [Performance](#performance).", form="not"),
)
# DynamoDB Local's flags that have no effect here: accepted and ignored.
LOCAL_IGNORED = ("-optimizeDbBeforeStartup",  # DynamoDB Local compacts its SQLite files; nothing to do here
                 "-disableTelemetry")  # dynalocal sends no telemetry


def option(field_name: str) -> Option:
    """The OPTIONS row of a Settings field."""
    for row in OPTIONS:
        if row.field == field_name:
            return row
    raise KeyError(field_name)
