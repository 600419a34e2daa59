"""The command line's DynamoDB Local flags and DYNALOCAL_* environment variables (cli.arguments, from config.OPTIONS)."""
from __future__ import annotations

import pytest

from dynalocal.cli import arguments as options
from dynalocal.cli.arguments import parse_args, settings_from


def parse(argv: list[str], env: dict[str, str] | None = None):
    return parse_args(argv, env or {})


def test_dynamodb_local_flags_are_translated():
    assert options.translate_local_flags(["-port", "8001", "-inMemory", "-sharedDb"]) == [
        "--port", "8001", "--in-memory", "--isolation", "shared"]
    assert options.translate_local_flags(["-dbPath", "/data", "-cors", "*", "-optimizeDbBeforeStartup",
                                          "-disableTelemetry", "-delayTransientStatuses"]) == [
        "--data-dir", "/data", "--cors-origins", "*", "--transient-delay", "1"]
    assert options.translate_local_flags(["--port", "9", "-help"]) == ["--port", "9", "--help"]


def test_dynamodb_local_command_line_parses():
    args = parse(["-port", "8001", "-inMemory", "-sharedDb", "-cors", "http://app.test:3000",
                  "-delayTransientStatuses", "-optimizeDbBeforeStartup", "-disableTelemetry"])
    assert (args.port, args.in_memory, args.isolation, args.data_dir) == (8001, True, "shared", None)
    assert args.cors_origins == "http://app.test:3000" and args.transient_delay == 1.0
    assert parse(["-dbPath", "/tmp/x"]).data_dir == "/tmp/x"


def test_in_memory_and_db_path_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as info:
        parse(["-inMemory", "-dbPath", "/tmp/x"])
    assert info.value.code == 2 and "cannot be used together" in capsys.readouterr().err


def test_every_option_is_settable_from_the_environment():
    args = parse([], {"DYNALOCAL_PORT": "8123", "DYNALOCAL_DATA_DIR": "/data", "DYNALOCAL_HOST": "0.0.0.0",
                      "DYNALOCAL_THROTTLING": "off", "DYNALOCAL_NO_RESET": "true", "DYNALOCAL_AUTH": "none",
                      "DYNALOCAL_ISOLATION": "account", "DYNALOCAL_TRANSIENT_DELAY": "2.5",
                      "DYNALOCAL_CREDENTIALS_FILE": "/etc/keys", "DYNALOCAL_CORS_ORIGINS": "*"})
    assert (args.port, args.data_dir, args.host, args.throttling, args.no_reset) == (8123, "/data", "0.0.0.0", "off",
                                                                                     True)
    assert (args.auth, args.isolation, args.transient_delay, args.credentials, args.cors_origins) == (
        "none", "account", 2.5, "/etc/keys", "*")
    # the command line wins over the environment
    assert parse(["--port", "9000"], {"DYNALOCAL_PORT": "8123"}).port == 9000
    assert parse(["-port", "9001"], {"DYNALOCAL_PORT": "8123"}).port == 9001
    assert parse([], {"DYNALOCAL_NO_RESET": "0"}).no_reset is False
    # a repeatable option takes a comma-separated list
    assert parse([], {"DYNALOCAL_INIT": "seed.json, template.yaml"}).init == ["seed.json", "template.yaml"]


@pytest.mark.parametrize("env, words", [
    ({"DYNALOCAL_PORT": "eighty"}, "DYNALOCAL_PORT: invalid value"),
    ({"DYNALOCAL_AUTH": "strict"}, "DYNALOCAL_AUTH: invalid choice"),
    ({"DYNALOCAL_NO_RESET": "maybe"}, "DYNALOCAL_NO_RESET: expected true or false"),
])
def test_bad_environment_values_are_usage_errors(env, words, capsys):
    with pytest.raises(SystemExit) as info:
        parse([], env)
    assert info.value.code == 2 and words in capsys.readouterr().err


def test_help_names_the_environment_variables(capsys):
    with pytest.raises(SystemExit):
        parse(["-help"])
    out = " ".join(capsys.readouterr().out.split())  # as one line: --help wraps its text
    for name in ("DYNALOCAL_PORT", "DYNALOCAL_DATA_DIR", "DYNALOCAL_CREDENTIALS_FILE", "DYNALOCAL_ISOLATION"):
        assert f"[env {name}]" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        parse(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("dynalocal 0.")


def test_wire_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("DYNALOCAL_CREDENTIALS", raising=False)
    keys = tmp_path / "keys"
    keys.write_text("# local keys\nAKIDONE:secret1:111122223333\n\nAKIDTWO:secret2\n")
    settings = settings_from(parse(["--auth", "verify", "--credentials", str(keys), "--isolation", "region"]))
    assert settings.credentials == {"AKIDONE": ("secret1", "111122223333"), "AKIDTWO": ("secret2", None)}
    assert settings.auth == "verify" and settings.isolation == "region"
    with pytest.raises(SystemExit, match="needs DYNALOCAL_CREDENTIALS"):
        settings_from(parse(["--auth", "verify"]))
    keys.write_text("no-secret-here\n")
    with pytest.raises(SystemExit, match="entry 1: expected KEY:SECRET"):
        settings_from(parse(["--credentials", str(keys)]))


def cors_origins(value: str | None) -> tuple[str, ...]:
    return settings_from(parse([] if value is None else ["--cors-origins", value])).cors_origins


def test_cors_origins_option():
    assert cors_origins(None) == ("http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*")
    assert cors_origins("*") == ("*",)
    assert cors_origins("https://a.test, http://b.test:8080") == ("https://a.test", "http://b.test:8080")


def test_no_options_give_the_settings_defaults():
    from dynalocal.config import Settings

    assert settings_from(parse_args([], {}), {}) == Settings()


def test_options_reach_their_settings_fields_in_the_fields_units():
    settings = settings_from(parse(["--sync-interval-ms", "5", "--snapshot-mb", "1.5", "--no-reset",
                                    "--allowed-hosts", "a.test, b.test", "--init", "x.json", "--init", "y.yaml",
                                    "--request-timeout", "7", "--keep-alive-timeout", "0.5", "--log-level", "debug",
                                    "-dbPath", "/tmp/d", "-delayTransientStatuses"]), {})
    assert (settings.sync_interval, settings.snapshot_bytes, settings.allow_reset) == (0.005, 1536 * 1024, False)
    assert (settings.allowed_hosts, settings.init) == (("a.test", "b.test"), ("x.json", "y.yaml"))
    assert (settings.request_timeout, settings.keep_alive_timeout, settings.log_level) == (7.0, 0.5, "debug")
    assert (settings.data_dir, settings.transient_delay) == ("/tmp/d", 1.0)


def test_every_option_has_its_own_flag_and_variable():
    from dataclasses import fields

    from dynalocal.config import OPTIONS, Settings

    names = {f.name for f in fields(Settings)}
    assert all(row.field in names for row in OPTIONS)
    for attribute in ("field", "flag", "env_name"):
        values = [getattr(row, attribute) for row in OPTIONS]
        assert len(values) == len(set(values)), f"two options share a {attribute}"


def test_vector_index_lag_counts_milliseconds():
    assert settings_from(parse(["--vector-index-lag-ms", "250"]), {}).vector_index_lag == 0.25
    assert settings_from(parse_args([], {"DYNALOCAL_VECTOR_INDEX_LAG_MS": "40"}), {}).vector_index_lag == 0.04
    assert settings_from(parse_args([], {}), {}).vector_index_lag == 0.0
