"""The `dynalocal` command line, generated from config.OPTIONS: flags, DynamoDB Local's flags, DYNALOCAL_*
environment variables, --help, the README's options table, and the Settings they come to.

Launchers, compose files and CI recipes written for Amazon's DynamoDB Local start it as
`java -jar DynamoDBLocal.jar -port 8001 -inMemory -sharedDb`; `dynalocal -port 8001 -inMemory
-sharedDb` works the same: its single-dash flags are rewritten to ours before parsing.
Containers are configured through the environment: every option `--some-option` can be given
as `DYNALOCAL_SOME_OPTION` (see Option.env_name). Precedence: command line > environment > default.
`python -m dynalocal.cli.arguments` prints the README's table.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping, Sequence

from dynalocal.config import LOCAL_IGNORED, OPTIONS, Option, Settings
from dynalocal.http.plugins.auth import load_credentials

TRUE_WORDS = frozenset(("1", "true", "yes", "on"))
FALSE_WORDS = frozenset(("0", "false", "no", "off", ""))
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


# Amazon's image runs `java` as its entry point, so its users pass Java's own arguments to it
# (`-jar DynamoDBLocal.jar`, `-Djava.library.path=./DynamoDBLocal_lib`): accepted and ignored.
JAVA_ARGUMENTS = ("-jar", "-Djava.library.path")

SUBCOMMANDS = """subcommands:
  dynalocal report [--endpoint URL] [--table T] [--json]
                        print a running server's capacity report: verdicts, hot keys, partitions
  dynalocal streams tail TABLE [--endpoint URL]
                        follow a table's stream records as they are written
  dynalocal repair --data-dir DIR
                        salvage a data directory that start-up refused as damaged or incomplete
each takes --help."""


def translate_local_flags(argv: Sequence[str], ignored: list[str] | None = None) -> list[str]:
    """Rewrite DynamoDB Local's single-dash flags into dynalocal's options; leave the rest alone.
    Java's own arguments (JAVA_ARGUMENTS) are dropped and appended to `ignored`."""
    local = {o.local: o for o in OPTIONS if o.local}
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        row = local.get(arg)
        if arg == "-jar" and i + 1 < len(args):
            if ignored is not None:
                ignored += args[i:i + 2]
            i += 2
            continue
        if arg.startswith("-Djava.library.path="):
            if ignored is not None:
                ignored.append(arg)
        elif row is not None:
            out.append(row.flag)
            if row.local_value is not None:
                out.append(row.local_value)
            elif not row.is_flag and i + 1 < len(args):  # its value follows
                out.append(args[i + 1])
                i += 1
        elif arg == "-help":
            out.append("--help")
        elif arg not in LOCAL_IGNORED:
            out.append(arg)
        i += 1
    return out


def plain(text: str) -> str:
    """Markdown help text as --help shows it: no backticks, links as their words, % escaped."""
    return _LINK.sub(r"\1", text).replace("`", "").replace("%", "%%")


def shown_default(row: Option) -> str:
    """The default as --help and the README show it (Markdown)."""
    value = row.default
    if row.is_flag:
        return "on" if value else "off"
    if value is None or value == "" or value == []:
        return "none"
    if isinstance(value, float):
        value = f"{value:g}"
    return f"`{value}`"


def build_parser() -> argparse.ArgumentParser:
    """The command's argparse parser, one argument per OPTIONS row (defaults from Settings)."""
    parser = argparse.ArgumentParser(prog="dynalocal", description="A DynamoDB-compatible local server.",
                                     epilog=SUBCOMMANDS, formatter_class=argparse.RawDescriptionHelpFormatter)
    for row in OPTIONS:
        text = f"{plain(row.help)} (default: {plain(shown_default(row))}) [env {row.env_name}]"
        if row.is_flag:
            parser.add_argument(row.flag, action="store_true", help=text)
            continue
        extra: dict = {"metavar": row.metavar} if row.metavar else {}
        if row.form == "repeat":
            parser.add_argument(row.flag, action="append", default=row.default, help=text, **extra)
        else:
            parser.add_argument(row.flag, type=value_type(row), default=row.default, choices=row.choices or None,
                                help=text, **extra)
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    return parser


class _Version(argparse.Action):
    """`--version`: the version is looked up only when asked (importlib.metadata cost 20-65 ms a start)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        sys.stdout.write(f"{parser.prog} {version()}\n")  # on stdout, as argparse's own "version" action
        parser.exit()


def value_type(row: Option) -> type:
    """What a flag's text is parsed as: float for ms/MiB, else the default's type (str when None)."""
    default = row.default
    if row.form in ("ms", "MiB"):
        return float
    return str if default is None else type(default)


def env_value(parser: argparse.ArgumentParser, row: Option, raw: str) -> object:
    """An environment variable's value, checked as the command line's would be (errors exit 2)."""
    name = row.env_name
    if row.form == "repeat":
        return [part.strip() for part in raw.split(",") if part.strip()]
    if row.is_flag:
        word = raw.strip().lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            parser.error(f"{name}: expected true or false, got {raw!r}")
        return word in TRUE_WORDS
    try:
        value = value_type(row)(raw)
    except (TypeError, ValueError):
        parser.error(f"{name}: invalid value {raw!r}")
    if row.choices and value not in row.choices:
        choices = ", ".join(map(repr, row.choices))
        parser.error(f"{name}: invalid choice {raw!r} (choose from {choices})")
    return value


def parse_args(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None,
               ignored: list[str] | None = None) -> argparse.Namespace:
    """Options from `argv` (default: sys.argv[1:]), DynamoDB Local's flags and DYNALOCAL_* variables
    (`environ`, default os.environ), in the flags' own terms (--sync-interval-ms in ms, ...).
    Java's arguments of a DynamoDB Local command line are dropped and appended to `ignored`."""
    environ = os.environ if environ is None else environ
    parser = build_parser()
    parser.set_defaults(**{row.dest: env_value(parser, row, environ[row.env_name])
                           for row in OPTIONS if row.env_name in environ})
    args = parser.parse_args(translate_local_flags(sys.argv[1:] if argv is None else argv, ignored))
    if args.in_memory and args.data_dir is not None:
        parser.error("-inMemory (--in-memory) and -dbPath (--data-dir) cannot be used together")
    return args


def settings_from(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
    """The Settings of parsed options; the credentials loaded (the file and DYNALOCAL_CREDENTIALS in `environ`)."""
    values = {row.field: row.to_field(getattr(args, row.dest)) for row in OPTIONS}
    try:
        credentials = load_credentials(values["credentials_file"], os.environ if environ is None else environ)
    except (OSError, ValueError) as err:
        raise SystemExit(f"dynalocal: cannot read credentials: {err}") from None
    if values["auth"] == "verify" and not credentials:
        raise SystemExit("dynalocal: --auth verify needs DYNALOCAL_CREDENTIALS or --credentials FILE")
    return Settings(**values, credentials=credentials)


def options_table() -> str:
    """The README's options table (Markdown), generated from OPTIONS."""
    lines = ["| Option | Environment | Default | Meaning |", "|---|---|---|---|"]
    for row in OPTIONS:
        flag = f"`{row.flag}` {row.metavar}" if row.metavar else f"`{row.flag}`"
        lines.append(f"| {flag} | `{row.env_name}` | {shown_default(row)} | {row.help} |")
    lines.append("| `--version` | | | Print the version and exit. |")
    return "\n".join(lines) + "\n"


def version() -> str:
    """The installed package's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("dynalocal")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
        return "unknown"


if __name__ == "__main__":
    sys.stdout.write(options_table())
