"""Command-line conveniences around cli.py's parser: DynamoDB Local's flags, environment variables.

Launchers, compose files and CI recipes written for Amazon's DynamoDB Local start it as
`java -jar DynamoDBLocal.jar -port 8001 -inMemory -sharedDb`; `dynalocal -port 8001 -inMemory
-sharedDb` must work the same, so its single-dash flags are rewritten to ours before parsing.
Containers are configured through the environment: every option `--some-option` can be given
as `DYNALOCAL_SOME_OPTION` (the command line wins over the environment).
"""
from __future__ import annotations

import argparse
import os
from typing import Mapping, Sequence

ENV_PREFIX = "DYNALOCAL_"
TRUE_WORDS = frozenset(("1", "true", "yes", "on"))
FALSE_WORDS = frozenset(("0", "false", "no", "off", ""))

# DynamoDB Local's flag -> our arguments (None: accepted and ignored, as it has no effect here).
# Its flags take one value (-port N, -dbPath DIR, -cors LIST) or none.
LOCAL_FLAGS_WITH_VALUE = {"-port": "--port", "-dbPath": "--data-dir", "-cors": "--cors-origins"}
LOCAL_FLAGS = {
    "-inMemory": ["--in-memory"],
    "-sharedDb": ["--isolation", "shared"],
    "-delayTransientStatuses": ["--transient-delay", "1"],
    "-optimizeDbBeforeStartup": None,  # DynamoDB Local compacts its SQLite files; nothing to do here
    "-disableTelemetry": None,  # dynalocal sends no telemetry
    "-help": ["--help"],
}
# Option destinations whose environment variable is not simply DYNALOCAL_<DEST>.
ENV_NAMES = {"credentials": "DYNALOCAL_CREDENTIALS_FILE"}  # DYNALOCAL_CREDENTIALS holds the keys themselves


def translate_local_flags(argv: Sequence[str]) -> list[str]:
    """Rewrite DynamoDB Local's single-dash flags into dynalocal's options; leave the rest alone."""
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in LOCAL_FLAGS_WITH_VALUE:
            out.append(LOCAL_FLAGS_WITH_VALUE[arg])
            if i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
        elif arg in LOCAL_FLAGS:
            out.extend(LOCAL_FLAGS[arg] or ())
        else:
            out.append(arg)
        i += 1
    return out


def env_name(action: argparse.Action) -> str:
    """The environment variable that sets an option."""
    return ENV_NAMES.get(action.dest, ENV_PREFIX + action.dest.upper())


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "version")]


def document_env(parser: argparse.ArgumentParser) -> None:
    """Name each option's environment variable in its --help text."""
    for action in _options(parser):
        note = f"[env {env_name(action)}]"
        action.help = f"{action.help} {note}" if action.help else note


def apply_env(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Use environment variables as the options' defaults (checked like command-line values)."""
    for action in _options(parser):
        raw = environ.get(env_name(action))
        if raw is None:
            continue
        if isinstance(action, argparse._AppendAction):  # a repeatable option: comma-separated values
            value = [part.strip() for part in raw.split(",") if part.strip()]
        elif action.nargs == 0:  # a flag (store_true)
            word = raw.strip().lower()
            if word not in TRUE_WORDS | FALSE_WORDS:
                parser.error(f"{env_name(action)}: expected true or false, got {raw!r}")
            value: object = word in TRUE_WORDS
        else:
            try:
                value = action.type(raw) if callable(action.type) else raw
            except (TypeError, ValueError, argparse.ArgumentTypeError):
                parser.error(f"{env_name(action)}: invalid value {raw!r}")
            if action.choices is not None and value not in action.choices:
                choices = ", ".join(map(repr, action.choices))
                parser.error(f"{env_name(action)}: invalid choice {raw!r} (choose from {choices})")
        action.default = value


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None,
          environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """Parse `argv` (default sys.argv[1:]) with DynamoDB Local's flags and DYNALOCAL_* variables."""
    import sys

    document_env(parser)
    apply_env(parser, os.environ if environ is None else environ)
    args = parser.parse_args(translate_local_flags(sys.argv[1:] if argv is None else argv))
    if getattr(args, "in_memory", False) and getattr(args, "data_dir", None) is not None:
        parser.error("-inMemory (--in-memory) and -dbPath (--data-dir) cannot be used together")
    return args
