"""server.auth, server.cors and server.compression on their own."""
from __future__ import annotations

import gzip
import time
import zlib

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from dynalocal.errors import (
    IncompleteSignatureException,
    InvalidSignatureException,
    MissingAuthenticationTokenException,
    UnrecognizedClientException,
)
from dynalocal.http.plugins import compression
from dynalocal.http.plugins.auth import (
    Authenticator,
    account_from_key,
    check_clock,
    load_credentials,
    parse_authorization,
    scope_of,
)
from dynalocal.http.plugins.cors import CorsPolicy

NOW = 1_735_732_800.0  # 2025-01-01T12:00:00Z


# --- auth -----------------------------------------------------------------------------------------

def signed(key="AKIDLOCAL", secret="s3cret", region="eu-west-1", body=b'{"Limit": 1}',
           service="dynamodb") -> tuple[dict[str, str], bytes]:
    """Headers (lower-cased) and body of a request botocore signs now."""
    request = AWSRequest(method="POST", url="http://127.0.0.1:8000/", data=body, headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.ListTables"})
    SigV4Auth(Credentials(key, secret), service, region).add_auth(request)
    headers = {k.lower(): v for k, v in request.headers.items()}
    headers["host"] = "127.0.0.1:8000"
    return headers, body


def verifier(shift: float = 0.0) -> Authenticator:
    """Verifies against AKIDLOCAL:s3cret, its clock `shift` seconds ahead of the signer's."""
    return Authenticator("verify", {"AKIDLOCAL": ("s3cret", "111122223333")}, clock=lambda: time.time() + shift)


def test_verify_accepts_botocore_signatures_and_names_the_caller():
    headers, body = signed()
    principal = verifier().authenticate("POST", "/", "", headers, body)
    assert (principal.access_key, principal.region, principal.account) == ("AKIDLOCAL", "eu-west-1", "111122223333")


@pytest.mark.parametrize("change, shift, error", [
    ({"secret": "nope"}, 0, InvalidSignatureException),
    ({"key": "AKIDNOBODY"}, 0, UnrecognizedClientException),
    ({}, 16 * 60, InvalidSignatureException),  # signed 16 minutes before the server's time
    ({}, -16 * 60, InvalidSignatureException),  # ... after it
])
def test_verify_refusals(change, shift, error):
    headers, body = signed(**change)
    with pytest.raises(error):
        verifier(shift).authenticate("POST", "/", "", headers, body)


def test_a_changed_body_or_header_breaks_the_signature():
    headers, body = signed()
    with pytest.raises(InvalidSignatureException):
        verifier().authenticate("POST", "/", "", headers, b'{"Limit": 2}')
    headers["x-amz-target"] = "DynamoDB_20120810.DeleteTable"
    with pytest.raises(InvalidSignatureException):
        verifier().authenticate("POST", "/", "", headers, body)


def test_clock_messages():
    with pytest.raises(InvalidSignatureException) as info:
        check_clock(NOW - 16 * 60, NOW)
    assert info.value.message == ("Signature expired: 20250101T114400Z is now earlier than 20250101T114500Z "
                                  "(20250101T120000Z - 15 min.)")
    with pytest.raises(InvalidSignatureException) as info:
        check_clock(NOW + 16 * 60, NOW)
    assert info.value.message == ("Signature not yet current: 20250101T121600Z is still later than "
                                  "20250101T121500Z (20250101T120000Z + 15 min.)")
    check_clock(NOW + 14 * 60, NOW)


def test_relaxed_and_none_modes():
    relaxed = Authenticator("relaxed")
    with pytest.raises(MissingAuthenticationTokenException) as info:
        relaxed.authenticate("POST", "/", "", {}, b"")
    assert info.value.message == "Request is missing Authentication Token"
    with pytest.raises(MissingAuthenticationTokenException):
        relaxed.authenticate("POST", "/", "", {"authorization": "Bearer abc"}, b"")
    header = "AWS4-HMAC-SHA256 Credential=anything/20250101/sa-east-1/dynamodb/aws4_request,SignedHeaders=host,Signature=0"
    principal = relaxed.authenticate("POST", "/", "", {"authorization": header}, b"")
    assert (principal.region, principal.account) == ("sa-east-1", "000000000000")
    assert relaxed.authenticate("POST", "/", "", {"authorization": header}, b"") is principal  # cached
    with pytest.raises(IncompleteSignatureException):
        relaxed.authenticate("POST", "/", "", {"authorization": "AWS4-HMAC-SHA256 Credential=x/y"}, b"")
    presigned = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=k%2F20250101%2Fap-south-1%2Fdynamodb%2Faws4_request"
    assert relaxed.authenticate("POST", "/", presigned, {}, b"").region == "ap-south-1"
    assert Authenticator("none").authenticate("POST", "/", "", {}, b"").region == "us-east-1"
    assert Authenticator("none").authenticate("POST", "/", "", {"authorization": "AWS4-garbage"}, b"").account == \
        "000000000000"
    assert Authenticator("none").authenticate("POST", "/", "", {"authorization": header}, b"").region == "sa-east-1"


def test_quick_caches_by_the_text_before_the_signature_and_agrees_with_the_full_parse():
    auth = Authenticator("relaxed")
    prefix = b"AWS4-HMAC-SHA256 Credential=k/20250101/eu-west-3/dynamodb/aws4_request, SignedHeaders=host, "
    first = auth.quick(prefix + b"Signature=" + b"0" * 64)
    assert first is not None and first.region == "eu-west-3"
    assert auth.quick(prefix + b"Signature=" + b"f" * 64) is first  # another signature, the same caller
    # A prefix that does not by itself make the header well-formed is never a cache hit.
    bad = b"AWS4-HMAC-SHA256 Credential=k/20250101/eu-west-3/dynamodb/aws4_request, "
    assert auth.quick(bad + b"Signature=00, SignedHeaders=host") is not None  # well-formed: accepted
    assert auth.quick(bad + b"Signature=00") is None  # no SignedHeaders: the full parse must refuse it
    with pytest.raises(IncompleteSignatureException):
        auth.authenticate("POST", "/", "", {"authorization": (bad + b"Signature=00").decode()}, b"")
    for header in (prefix + b"Signature=", prefix[:-2] + b" Signature=1", b"AWS4-HMAC-SHA256 Signature=1",
                   prefix.replace(b"aws4_request", b"aws5_request") + b"Signature=1"):
        for _ in range(2):  # a first (uncached) and a second look agree with the full parse
            assert auth.quick(header) is auth._relaxed(header.decode())
    assert Authenticator("verify").quick(prefix + b"Signature=0") is None  # verify mode checks every signature


def test_parse_authorization_names_what_is_missing():
    parsed = parse_authorization("AWS4-HMAC-SHA256 Credential=K/20250101/us-east-1/dynamodb/aws4_request,"
                                 "SignedHeaders=host;x-amz-date,Signature=abc")
    assert (parsed.access_key, parsed.region, parsed.service, parsed.signed_headers) == (
        "K", "us-east-1", "dynamodb", "host;x-amz-date")
    with pytest.raises(IncompleteSignatureException) as info:
        parse_authorization("AWS4-HMAC-SHA256 Credential=K/20250101/us-east-1/dynamodb/aws4_request")
    assert info.value.message.startswith("Authorization header requires 'Signature' parameter. Authorization "
                                         "header requires 'SignedHeaders' parameter.")


def test_accounts_and_scopes(tmp_path):
    assert account_from_key("ASIAY34FZKBOKMUTVV7A") == "609629065308"  # AWS's documented example
    assert account_from_key("123456789012") == "123456789012"
    assert account_from_key("test") == account_from_key("AKIA!!!!!!!!!!!!!!!!") == "000000000000"
    assert scope_of("shared", "eu-west-1", "1" * 12) == ""
    assert scope_of("region", "eu-west-1", "1" * 12) == "eu-west-1/"
    assert scope_of("account", "eu-west-1", "1" * 12) == "111111111111/eu-west-1/"
    keys = tmp_path / "keys"
    keys.write_text("K1:s1\nK2:s2:222222222222\n")
    assert load_credentials(str(keys), {"DYNALOCAL_CREDENTIALS": "K0:s0:000000000001,K1:old"}) == {
        "K0": ("s0", "000000000001"), "K1": ("s1", None), "K2": ("s2", "222222222222")}
    with pytest.raises(ValueError, match="12 digits"):
        load_credentials(None, {"DYNALOCAL_CREDENTIALS": "K:s:12"})


# --- cors -----------------------------------------------------------------------------------------

def test_cors_origin_patterns():
    local = CorsPolicy()
    for origin in (b"http://localhost:3000", b"http://localhost", b"http://127.0.0.1:8080", b"http://[::1]:5173"):
        assert local.allows(origin)
    for origin in (b"https://localhost:3000", b"http://localhost.evil.example", b"http://localhost:3000.evil",
                   b"https://evil.example", b"null"):
        assert not local.allows(origin)
    assert CorsPolicy(("*",)).response_headers(b"https://x.example")[0] == (b"access-control-allow-origin", b"*")
    listed = CorsPolicy(("https://app.example", "http://dev.example:*"))
    assert listed.allows(b"https://app.example") and listed.allows(b"http://dev.example:81")
    assert not listed.allows(b"https://app.example:444")
    assert listed.preflight(b"https://other.example", None) == (403, [])


# --- compression ----------------------------------------------------------------------------------

def test_decode_gzip_deflate_and_raw_deflate():
    body = b'{"TableName": "t"}' * 100
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    for data, coding in ((gzip.compress(body), b"gzip"), (zlib.compress(body), b"deflate"),
                         (raw.compress(body) + raw.flush(), b"deflate"), (gzip.compress(body) * 2, b"gzip"),
                         (body, b"identity"), (gzip.compress(gzip.compress(body)), b"gzip, gzip")):
        assert compression.decode(data, coding) == (body * 2 if data[:2] == b"\x1f\x8b" and coding == b"gzip"
                                                    and len(data) == 2 * len(gzip.compress(body)) else body)


@pytest.mark.parametrize("data, coding", [(b"", b"gzip"), (b"plain", b"gzip"), (gzip.compress(b"x")[:-3], b"gzip"),
                                          (gzip.compress(b"x"), b"br"), (zlib.compress(b"x") + b"junk", b"deflate")])
def test_undecodable(data, coding):
    with pytest.raises(compression.UndecodableBody):
        compression.decode(data, coding)


def test_the_limit_is_enforced_while_decoding():
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB of zeros: about 64 KB compressed
    with pytest.raises(compression.DecodedTooLarge):
        compression.decode(bomb, b"gzip", limit=1024 * 1024)
    assert len(compression.decode(gzip.compress(b"a" * 1024), b"gzip", limit=1024)) == 1024


def test_accept_encoding_and_encode():
    assert compression.accepted(b"gzip, deflate") == b"gzip"
    assert compression.accepted(b"deflate") == b"deflate"
    assert compression.accepted(b"gzip;q=0, deflate;q=0.5") == b"deflate"
    assert compression.accepted(b"identity") is None and compression.accepted(b"*") == b"gzip"
    body = b"x" * 5000
    assert gzip.decompress(compression.encode(body, b"gzip")) == body
    assert zlib.decompress(compression.encode(body, b"deflate")) == body
