"""The `dynalocal` command: parse options (cli.arguments), build the server (cli.build), serve it."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from dynalocal.cli.arguments import parse_args, settings_from, version

__all__ = ["main", "parse_args", "repair", "version"]


def repair(argv: list[str]) -> int:
    """`dynalocal repair --data-dir DIR`: salvage a write-ahead log that start-up refused as damaged."""
    parser = argparse.ArgumentParser(prog="dynalocal repair", description=(
        "Rewrite a damaged snapshot and damaged write-ahead log segments with every intact record, keeping each "
        "original as <file>.damaged, stand in for a missing snapshot with an empty one, and report what was "
        "dropped. Run it when start-up refuses a damaged or incomplete data directory."))
    parser.add_argument("--data-dir", required=True, help="the data directory to repair (no server may be using it)")
    args = parser.parse_args(argv)
    from pathlib import Path

    from dynalocal.journal.lock import DataDirectoryInUse, lock_directory  # (as above)

    # each subcommand loads only what it uses (see main)
    from dynalocal.journal.repair import repair_directory
    from dynalocal.journal.snaprepair import repair_snapshot, restore_base  # (as above)
    from dynalocal.journal.streamrepair import repair_streams  # (as above)

    directory = Path(args.data_dir)
    if not directory.is_dir():
        print(f"dynalocal repair: {directory} is not a directory")
        return 2
    try:
        lock = lock_directory(directory)
    except DataDirectoryInUse as err:
        print(f"dynalocal repair: {err}; stop it first")
        return 2
    try:
        base = [line for line in (repair_snapshot(directory), restore_base(directory)) if line is not None]
        done = repair_directory(directory)
        streams = repair_streams(directory)
    finally:
        if lock is not None:
            os.close(lock)
    if streams is not None:
        base.append(streams)
    if not done and not base:
        print(f"dynalocal repair: the write-ahead log in {directory} has no damage; nothing changed")
        return 0
    for line in base:
        print(line)
    for segment in done:
        print(segment.describe())
    print("Records of a table whose creation was in dropped bytes are skipped at start-up (it says how many).")
    return 0


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["repair"]:
        raise SystemExit(repair(argv[1:]))
    if argv[:1] == ["report"]:  # a subcommand of its own: dynalocal report [--endpoint URL] [--table T] [--json]
        from dynalocal.cli.report import main as report  # a client: loads no server module

        raise SystemExit(report(argv[1:]))
    if argv[:1] == ["streams"]:  # a client tool: `dynalocal streams tail TABLE`
        from dynalocal.cli.streams_tail import main as streams_main  # a client too

        raise SystemExit(streams_main(argv[1:]))
    ignored: list[str] = []
    settings = settings_from(parse_args(argv, ignored=ignored))
    # the server's modules load only to serve (not for repair, report or streams)
    from dynalocal.cli.build import ConfigError, build_server
    from dynalocal.http import collector, hugepages  # (as above)
    from dynalocal.http.serve import StartupFailed  # (as above)

    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if ignored:
        logging.getLogger("dynalocal").info("ignored DynamoDB Local's Java arguments: %s", " ".join(ignored))
    try:
        # with CORS, authentication and isolation, compression; the data directory loads once listening
        server = build_server(settings, load_later=True)
    except ConfigError as err:
        raise SystemExit(f"dynalocal: {err}") from None
    collector.install()  # long-lived data out of cycle collections: no 100 ms pauses on big tables
    hugepages.install(huge_pages=settings.huge_pages)  # free heap pages returned; a large heap on 2 MiB pages
    try:
        server.run()
    except OSError as err:  # e.g. the port is taken
        logging.getLogger("dynalocal").error("cannot listen on %s:%d: %s", settings.host, settings.port, err)
        raise SystemExit(3) from None
    except StartupFailed as err:  # a start-up hook failed (logged): exit as uvicorn did when its lifespan failed
        if isinstance(err.__cause__, ConfigError):  # the data directory (loaded once listening)
            raise SystemExit(f"dynalocal: {err.__cause__}") from None
        raise SystemExit(3) from None
