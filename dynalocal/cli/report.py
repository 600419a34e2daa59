"""`dynalocal report`: the diagnosis of a running server's tables, in the terminal or as JSON."""
from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from dynalocal.config import option

DEFAULT_ENDPOINT = "http://127.0.0.1:8000"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="dynalocal report",
        description="Which tables have a hot key, which are under-provisioned, and what to change.")
    parser.add_argument("--endpoint", default=None,
                        help="the server (default: $AWS_ENDPOINT_URL_DYNAMODB, $AWS_ENDPOINT_URL, else "
                             f"{DEFAULT_ENDPOINT})")
    parser.add_argument("--table", default=None, help="only this table")
    parser.add_argument("--json", action="store_true", help="the report as JSON (GET /_dynalocal/report)")
    token_env = option("admin_token").env_name  # the server's own variable for it
    parser.add_argument("--admin-token", default=os.environ.get(token_env),
                        help=f"the server's admin token, if it has one (default: ${token_env})")
    return parser.parse_args(argv)


def endpoint_of(args: argparse.Namespace) -> str:
    url = args.endpoint or os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL")
    return (url or DEFAULT_ENDPOINT).rstrip("/")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    url = endpoint_of(args)
    query = {"format": "json" if args.json else "text"}
    if args.table:
        query["table"] = args.table
    try:
        request = urllib.request.Request(f"{url}/_dynalocal/report?{urllib.parse.urlencode(query)}")
        if args.admin_token:
            request.add_header("Authorization", f"Bearer {args.admin_token}")
        with urllib.request.urlopen(request, timeout=30) as resp:
            body = resp.read().decode()
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")
        try:
            parsed = json.loads(detail)
            detail = parsed.get("error") or parsed.get("message") or detail
        except ValueError:
            pass
        print(f"dynalocal report: {url} answered {err.code}: {detail}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        print(f"dynalocal report: cannot reach a dynalocal server at {url} ({reason}); start one with "
              "`dynalocal` or pass --endpoint", file=sys.stderr)
        return 2
    sys.stdout.write(body if body.endswith("\n") else body + "\n")
    return 0
