"""The S3 stand-in (journal.s3dir) and the listing pages of background operations (engine.jobs.page)."""
from __future__ import annotations

import gzip
import sys

import pytest
import zstandard

from dynalocal.engine.jobs import page
from dynalocal.errors import ValidationException
from dynalocal.journal.s3dir import S3Error, bucket_dir, join, lines, list_objects, write_object


def test_objects_are_listed_under_a_prefix_in_lexical_key_order(tmp_path):
    for key in ("in/b.json", "in/a/2.json", "in/a/10.json", "inx.json", "out/c.json", "in/.tmp-d.json"):
        (tmp_path / "bkt" / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "bkt" / key).write_bytes(b"x")
    assert [o.key for o in list_objects(str(tmp_path), "bkt", "in/")] == ["in/a/10.json", "in/a/2.json", "in/b.json"]
    assert [o.key for o in list_objects(str(tmp_path), "bkt", "in")] == [
        "in/a/10.json", "in/a/2.json", "in/b.json", "inx.json"]
    assert [o.key for o in list_objects(str(tmp_path), "bkt", "in/a/1")] == ["in/a/10.json"]
    assert list_objects(str(tmp_path), "bkt", "none/") == []


def test_missing_configuration_bucket_and_escaping_keys_are_s3_errors(tmp_path):
    with pytest.raises(S3Error) as err:
        bucket_dir(None, "b")
    assert err.value.code == "S3_NOT_CONFIGURED"
    with pytest.raises(S3Error) as err:
        bucket_dir(str(tmp_path), "missing")
    assert err.value.code == "S3_BUCKET_NOT_FOUND"
    (tmp_path / "b").mkdir()
    with pytest.raises(S3Error):
        write_object(str(tmp_path), "b", "../escape.json", b"x")
    assert not (tmp_path / "escape.json").exists()


def test_objects_are_written_atomically_and_read_through_their_compression(tmp_path):
    (tmp_path / "b").mkdir()
    path = write_object(str(tmp_path), "b", join("a/", "/c", None, "d.json.gz"), gzip.compress(b"1\n2\n"))
    assert path == tmp_path / "b" / "a" / "c" / "d.json.gz"
    assert [p.name for p in path.parent.iterdir()] == ["d.json.gz"]
    assert list(lines(path, "GZIP")) == [b"1\n", b"2\n"]
    plain = write_object(str(tmp_path), "b", "e.json", b"x\ny")
    assert list(lines(plain, "NONE")) == [b"x\n", b"y"]


def test_pages_carry_the_next_index_in_hex():
    items = list(range(30))
    first, token = page(items, 25, None)  # type: ignore[arg-type]
    assert first == items[:25] and token == f"{25:016x}"
    rest, token = page(items, 25, f"{25:016x}")  # type: ignore[arg-type]
    assert rest == items[25:] and token is None
    assert page(items, 10, None, 112)[1] == "0" * 110 + "0a"  # type: ignore[arg-type]
    with pytest.raises(ValidationException):
        page(items, 10, "zz")  # type: ignore[arg-type]


def test_zstd_is_read_and_an_install_without_zstandard_is_a_clear_failure(tmp_path, monkeypatch):
    path = tmp_path / "a.json.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b"one\ntwo\n"))
    assert list(lines(path, "ZSTD")) == [b"one\n", b"two\n"]
    monkeypatch.setitem(sys.modules, "zstandard", None)  # what an import of a missing package meets
    with pytest.raises(S3Error) as err:
        list(lines(path, "ZSTD"))
    assert err.value.code == "UNSUPPORTED_COMPRESSION" and "zstandard" in err.value.message
