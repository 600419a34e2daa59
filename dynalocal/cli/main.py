"""The `dynalocal` command: parse options, build the app, serve it (serve.HttpServer)."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from dynalocal.cli import options
from dynalocal.engine.context import Context, Settings


def parse_args(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> argparse.Namespace:
    """Options from `argv` (default: sys.argv), DynamoDB Local's flags and DYNALOCAL_* variables
    (`environ`, default os.environ)."""
    parser = argparse.ArgumentParser(prog="dynalocal", description="A DynamoDB-compatible local server.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    parser.add_argument("--throttling", default="enforce", choices=["enforce", "report", "off"],
                        help="per-partition throttling: refuse (enforce), only record and log (report), or off")
    parser.add_argument("--ttl-interval", type=float, default=1.0,
                        help="seconds between sweeps that delete expired TTL items (default 1)")
    parser.add_argument("--burst-seconds", type=float, default=300.0,
                        help="seconds of unused provisioned capacity kept as burst (default 300; 0: none)")
    parser.add_argument("--partition-burst-seconds", type=float, default=5.0,
                        help="seconds of a partition's 3000 RCU / 1000 WCU ceiling kept as burst (default 5; 0: none)")
    parser.add_argument("--capacity-model", default="adaptive", choices=["adaptive", "classic"],
                        help="adaptive: DynamoDB today (table-level capacity, partition ceilings); classic: fixed "
                             "1/N shares per partition (per table: tag dynalocal:capacity-model)")
    parser.add_argument("--data-dir", default=None,
                        help="persist tables and items in this directory (default: in memory only)")
    parser.add_argument("--sync", default="batch", choices=["always", "batch", "none"],
                        help="fsync the log before each answer (always), per group of writes (batch), or never")
    parser.add_argument("--sync-interval-ms", type=float, default=2.0,
                        help="batch mode: longest milliseconds a group of writes keeps gathering while more keep arriving "
                             "(default 2)")
    parser.add_argument("--snapshot-mb", type=float, default=64.0,
                        help="take a snapshot once the log has grown this many MiB (default 64)")
    parser.add_argument("--no-reset", action="store_true", help="disable POST /_dynalocal/reset")
    parser.add_argument("--admin-token", default=os.environ.get("DYNALOCAL_ADMIN_TOKEN") or None,
                        help="require this token for admin endpoints other than health and metrics (needed to use "
                             "them on a non-loopback bind; default: env DYNALOCAL_ADMIN_TOKEN)")
    parser.add_argument("--request-timeout", type=float, default=30.0,
                        help="seconds a client has to send a whole request (default 30)")
    parser.add_argument("--keep-alive-timeout", type=float, default=5.0,
                        help="seconds an idle keep-alive connection stays open (default 5)")
    parser.add_argument("--allowed-hosts", default="", metavar="NAMES",
                        help="comma-separated Host names served besides localhost and IP addresses when bound to "
                             "loopback (e.g. a compose service name; '*' allows any); a non-loopback --host "
                             "serves any Host")
    parser.add_argument("--init", action="append", default=[], metavar="FILE",
                        help="at start, create the tables (and load the items) of a JSON seed file or a "
                             "CloudFormation/SAM template; may be repeated")
    add_wire_options(parser)
    return options.parse(parser, argv, environ)


def add_wire_options(parser: argparse.ArgumentParser) -> None:
    """Authentication, isolation, CORS, DynamoDB Local's transient statuses, --version."""
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument("--auth", default="relaxed", choices=["relaxed", "verify", "none"],
                        help="relaxed: any well-formed SigV4 Authorization header is accepted unverified (default); "
                             "verify: signatures are checked against DYNALOCAL_CREDENTIALS or --credentials; "
                             "none: unsigned requests are served too")
    parser.add_argument("--credentials", default=None, metavar="FILE",
                        help="file of KEY:SECRET[:ACCOUNT] lines for --auth verify and --isolation account")
    parser.add_argument("--isolation", default="shared", choices=["shared", "region", "account"],
                        help="shared: one database for every client (default, DynamoDB Local's -sharedDb); "
                             "region: tables per region; account: tables per account and region")
    parser.add_argument("--cors-origins", default=None, metavar="LIST",
                        help="comma-separated origins browsers may call from, or * for any "
                             "(default: this machine's, http://localhost:*, http://127.0.0.1:*, http://[::1]:*)")
    parser.add_argument("--transient-delay", type=float, default=0.0, metavar="SECONDS",
                        help="tables stay CREATING/UPDATING/DELETING this long, as on AWS (default 0: at once; "
                             "DynamoDB Local's -delayTransientStatuses sets 1)")
    parser.add_argument("--in-memory", action="store_true",
                        help="keep everything in memory (the default; DynamoDB Local's -inMemory)")


def version() -> str:
    """The installed package's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("dynalocal")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
        return "unknown"


def repair(argv: list[str]) -> int:
    """`dynalocal repair --data-dir DIR`: salvage a write-ahead log that start-up refused as damaged."""
    parser = argparse.ArgumentParser(prog="dynalocal repair", description=(
        "Rewrite damaged write-ahead log segments with every intact record, keeping each original as "
        "<segment>.damaged, and report what was dropped. Run it when start-up refuses a damaged log."))
    parser.add_argument("--data-dir", required=True, help="the data directory to repair (no server may be using it)")
    args = parser.parse_args(argv)
    from pathlib import Path

    from dynalocal.journal.repair import repair_directory
    from dynalocal.http.durability import DataDirectoryInUse, _lock

    directory = Path(args.data_dir)
    if not directory.is_dir():
        print(f"dynalocal repair: {directory} is not a directory")
        return 2
    try:
        lock = _lock(directory)
    except DataDirectoryInUse as err:
        print(f"dynalocal repair: {err}; stop it first")
        return 2
    try:
        done = repair_directory(directory)
    finally:
        if lock is not None:
            os.close(lock)
    if not done:
        print(f"dynalocal repair: the write-ahead log in {directory} has no damage; nothing changed")
        return 0
    for segment in done:
        print(segment.describe())
    print("Records of a table whose creation was in dropped bytes are skipped at start-up (it says how many).")
    return 0


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["repair"]:
        raise SystemExit(repair(argv[1:]))
    if argv[:1] == ["report"]:  # a subcommand of its own: dynalocal report [--endpoint URL] [--table T] [--json]
        from dynalocal.cli.report import main as report

        raise SystemExit(report(argv[1:]))
    if argv[:1] == ["streams"]:  # a client tool: `dynalocal streams tail TABLE`
        from dynalocal.cli.streams_tail import main as streams_main

        raise SystemExit(streams_main(argv[1:]))
    args = parse_args(argv)
    from dynalocal.app import create_app
    from dynalocal.http.plugins import install as install_plugins
    from dynalocal.http.serve import HttpServer, StartupFailed

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    ctx = Context(settings=Settings(host=args.host, port=args.port, throttling=args.throttling,
                                   burst_seconds=args.burst_seconds, ttl_interval=args.ttl_interval,
                                   partition_burst_seconds=args.partition_burst_seconds,
                                   capacity_model=args.capacity_model,
                                   allow_reset=not args.no_reset, data_dir=args.data_dir, sync=args.sync,
                                   sync_interval=args.sync_interval_ms / 1000,
                                   snapshot_bytes=int(args.snapshot_mb * 1024 * 1024),
                                   admin_token=args.admin_token, **wire_settings(args)))
    if args.data_dir is not None:
        from dynalocal.http.durability import STARTUP_ERRORS, Durability

        try:
            Durability.open(ctx)
        except STARTUP_ERRORS as err:
            raise SystemExit(f"dynalocal: cannot use --data-dir {args.data_dir}: {err}") from None
    if args.init:
        from dynalocal.seed.template import SeedError
        from dynalocal.seed.loader import seed_hook

        try:
            ctx.startup.append(seed_hook(ctx, args.init))
        except SeedError as err:
            raise SystemExit(f"dynalocal: cannot use --init {err}") from None
    server = HttpServer(create_app(ctx), args.host, args.port, request_timeout=args.request_timeout,
                        keep_alive_timeout=args.keep_alive_timeout, allowed_hosts=allowed_hosts(args.allowed_hosts))
    install_plugins(server)  # CORS, authentication and isolation, compression
    try:
        server.run()
    except OSError as err:  # e.g. the port is taken
        logging.getLogger("dynalocal").error("cannot listen on %s:%d: %s", args.host, args.port, err)
        raise SystemExit(3) from None
    except StartupFailed:  # a start-up hook failed (logged): exit as uvicorn did when its lifespan failed
        raise SystemExit(3) from None


def wire_settings(args: argparse.Namespace) -> dict:
    """The Settings members of add_wire_options (credentials loaded, CORS origins split)."""
    from dynalocal.http.plugins.auth import load_credentials

    try:
        credentials = load_credentials(args.credentials)
    except (OSError, ValueError) as err:
        raise SystemExit(f"dynalocal: cannot read credentials: {err}") from None
    if args.auth == "verify" and not credentials:
        raise SystemExit("dynalocal: --auth verify needs DYNALOCAL_CREDENTIALS or --credentials FILE")
    return {"auth": args.auth, "credentials": credentials, "isolation": args.isolation,
            "cors_origins": cors_origins(args.cors_origins), "transient_delay": max(0.0, args.transient_delay)}


def cors_origins(value: str | None) -> tuple[str, ...]:
    """--cors-origins as a tuple of origin patterns (the local ones by default)."""
    from dynalocal.http.plugins.cors import LOCAL_ORIGINS

    if value is None:
        return LOCAL_ORIGINS
    return tuple(o.strip() for o in value.split(",") if o.strip())


def allowed_hosts(value: str) -> list[str]:
    """--allowed-hosts: names separated by commas (or spaces)."""
    return [name for name in value.replace(",", " ").split() if name]
