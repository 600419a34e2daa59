"""Who is calling: SigV4 Authorization headers, checked as DynamoDB checks them, and the caller's
region and account (for ARNs and for `--isolation`).

Modes (`--auth`):
* relaxed (default): the request must carry a well-formed SigV4 Authorization header (SDKs
  always sign); the signature itself is not checked. None at all ->
  MissingAuthenticationTokenException, as DynamoDB answers.
* verify: the signature is checked against the known credentials (DYNALOCAL_CREDENTIALS
  `KEY:SECRET[:ACCOUNT],...` and/or a `--credentials` file of such lines), with DynamoDB's
  errors for an unknown key, a wrong secret and a clock more than 15 minutes off. The signature
  binds the request: the payload hash is computed from the body received (an
  `x-amz-content-sha256` header that differs, `UNSIGNED-PAYLOAD` included, is refused: only S3
  accepts unsigned payloads), and SignedHeaders must name `host`, the date header and
  `x-amz-target` (docs/behaviour/wire.md §5).
* none: anything goes; an unsigned request is served as region us-east-1.

The region comes from the credential scope (`Credential=<key>/<date>/<region>/<service>/aws4_request`);
the account from the credentials (third field), else from the access key as LocalStack derives
it: a 12-digit key is the account itself, an AKIA/ASIA key encodes it, anything else is
000000000000. Presigned query-string requests are accepted in relaxed mode only.
"""
from __future__ import annotations

import base64
import calendar
import hashlib
import hmac
import os
import re
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Protocol, overload
from urllib.parse import quote, unquote

from dynalocal.engine.caller import Caller, scope_of  # noqa: F401  (scope_of: for callers of this module)
from dynalocal.errors import (
    IncompleteSignatureException,
    InvalidSignatureException,
    MissingAuthenticationTokenException,
    UnrecognizedClientException,
)
from dynalocal.storage.database import ACCOUNT as DEFAULT_ACCOUNT
from dynalocal.storage.database import REGION as DEFAULT_REGION

SKEW = 15 * 60  # seconds a request's date may differ from ours
ALGORITHM = "AWS4-HMAC-SHA256"
MISSING_TOKEN = "Request is missing Authentication Token"
UNRECOGNIZED = "The security token included in the request is invalid."
BAD_SIGNATURE = ("The request signature we calculated does not match the signature you provided. Check your AWS "
                 "Secret Access Key and signing method. Consult the service documentation for details.")
_ACCOUNT = re.compile(r"\d{12}")
# SignedHeaders a verified request must name (DynamoDB's wording for Host; the others by analogy):
# without them a captured signature could be replayed to another operation or date.
MUST_SIGN = {name: f"'{title}' must be a 'SignedHeader' in the AWS Authorization."
             for name, title in (("x-amz-date", "X-Amz-Date"), ("date", "Date"), ("x-amz-target", "X-Amz-Target"))}
MUST_SIGN["host"] = "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."


class Headers(Protocol):
    """A request's headers as authentication reads them, by lower-cased name: a dict, or the wire
    plug-in's lazy view of the request (http.plugins)."""

    @overload
    def get(self, name: str, /) -> str | None: ...

    @overload
    def get(self, name: str, default: str, /) -> str: ...


# --- credentials ----------------------------------------------------------------------------------

def parse_credentials(lines: list[str], origin: str) -> dict[str, tuple[str, str | None]]:
    """`KEY:SECRET[:ACCOUNT]` lines (blank lines and `#` comments skipped) -> {key: (secret, account)}."""
    out: dict[str, tuple[str, str | None]] = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(":")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1]:
            raise ValueError(f"{origin} entry {number}: expected KEY:SECRET[:ACCOUNT]")
        account = parts[2] if len(parts) == 3 else None
        if account is not None and not _ACCOUNT.fullmatch(account):
            raise ValueError(f"{origin} entry {number}: the account must be 12 digits")
        out[parts[0]] = (parts[1], account)
    return out


def load_credentials(path: str | None, environ: Mapping[str, str] | None = None) -> dict[str, tuple[str, str | None]]:
    """Credentials from DYNALOCAL_CREDENTIALS (comma-separated) and the --credentials file."""
    environ = os.environ if environ is None else environ
    out = parse_credentials(environ.get("DYNALOCAL_CREDENTIALS", "").split(","), "DYNALOCAL_CREDENTIALS")
    if path is not None:
        with open(path, encoding="utf-8") as f:
            out.update(parse_credentials(f.read().splitlines(), path))
    return out


def account_from_key(access_key: str) -> str:
    """The account an access key belongs to, derived as LocalStack does (see the module doc)."""
    if _ACCOUNT.fullmatch(access_key):
        return access_key
    if len(access_key) == 20 and access_key[:4] in ("AKIA", "ASIA"):
        try:
            raw = base64.b32decode(access_key[4:])
        except ValueError:
            return DEFAULT_ACCOUNT
        return f"{(int.from_bytes(raw[:6], 'big') & 0x7FFFFFFFFF80) >> 7:012d}"
    return DEFAULT_ACCOUNT


# --- the Authorization header ---------------------------------------------------------------------

class Signed:
    """The parts of a SigV4 Authorization header."""

    __slots__ = ("access_key", "date", "region", "service", "signed_headers", "signature")

    def __init__(self, credential: str, signed_headers: str, signature: str) -> None:
        scope = credential.split("/")
        if len(scope) != 5 or scope[4] != "aws4_request" or not all(scope):
            raise IncompleteSignatureException(f"Credential should be scoped to a valid region, not '{credential}'. ")
        self.access_key, self.date, self.region, self.service = scope[:4]
        self.signed_headers = signed_headers
        self.signature = signature


def parse_authorization(header: str) -> Signed:
    """Parse `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...` (commas with or
    without spaces); IncompleteSignatureException names what is missing, as DynamoDB does."""
    algorithm, _, rest = header.partition(" ")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, eq, value = part.strip().partition("=")
        if eq:
            fields[name] = value.strip()
    missing = [f"Authorization header requires '{name}' parameter." for name in ("Credential", "Signature",
                                                                                 "SignedHeaders")
               if not fields.get(name)]
    if algorithm != ALGORITHM:
        missing.append(f"Unsupported AWS 'algorithm': '{algorithm}'.")
    if missing:
        raise IncompleteSignatureException(" ".join(missing) + f" Authorization={header}")
    return Signed(fields["Credential"], fields["SignedHeaders"], fields["Signature"])


# --- verification ---------------------------------------------------------------------------------

def _amz_time(seconds: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(seconds))


def request_time(headers: Headers) -> tuple[str, float] | None:
    """(the timestamp as signed, epoch seconds) from X-Amz-Date or else Date; None if neither parses."""
    amz = headers.get("x-amz-date")
    if amz:
        try:
            return amz, float(calendar.timegm(time.strptime(amz, "%Y%m%dT%H%M%SZ")))
        except ValueError:
            return None
    date = headers.get("date")
    if date:
        try:
            seconds = parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError):
            return None
        return _amz_time(seconds), seconds
    return None


def check_clock(signed_at: float, now: float) -> None:
    """DynamoDB refuses a request signed more than 15 minutes before or after its own clock."""
    if signed_at < now - SKEW:
        raise InvalidSignatureException(f"Signature expired: {_amz_time(signed_at)} is now earlier than "
                                        f"{_amz_time(now - SKEW)} ({_amz_time(now)} - 15 min.)")
    if signed_at > now + SKEW:
        raise InvalidSignatureException(f"Signature not yet current: {_amz_time(signed_at)} is still later than "
                                        f"{_amz_time(now + SKEW)} ({_amz_time(now)} + 15 min.)")


def check_signed_headers(signed: Signed, date_header: str, target: bool = True) -> None:
    """Refuse a signature that does not cover the host, the date header used and (`target`: on the
    DynamoDB endpoint) the operation (InvalidSignatureException, as DynamoDB refuses an unsigned Host)."""
    names = {name.strip().lower() for name in signed.signed_headers.split(";")}
    for name in ("host", date_header, "x-amz-target") if target else ("host", date_header):
        if name not in names:
            raise InvalidSignatureException(MUST_SIGN[name])


def _canonical_query(query: str) -> str:
    pairs = []
    for part in query.split("&") if query else ():
        name, _, value = part.partition("=")
        pairs.append((quote(unquote(name), safe="-_.~"), quote(unquote(value), safe="-_.~")))
    return "&".join(f"{n}={v}" for n, v in sorted(pairs))


def expected_signature(signed: Signed, secret: str, method: str, path: str, query: str,
                       headers: Headers, body: bytes, timestamp: str) -> str:
    """The SigV4 signature of a request as its signer computed it (canonical request, string to
    sign, derived key); `headers` are lower-cased names -> values as received."""
    names = signed.signed_headers.split(";")
    canonical_headers = "".join(f"{n}:{' '.join(headers.get(n, '').split())}\n" for n in names)
    payload = hashlib.sha256(body).hexdigest()  # of the body received, never of a header's claim
    canonical = "\n".join((method, quote(unquote(path) or "/", safe="/-_.~"), _canonical_query(query),
                           canonical_headers, signed.signed_headers, payload))
    scope = f"{signed.date}/{signed.region}/{signed.service}/aws4_request"
    to_sign = "\n".join((ALGORITHM, timestamp, scope, hashlib.sha256(canonical.encode()).hexdigest()))
    key = ("AWS4" + secret).encode()
    for part in (signed.date, signed.region, signed.service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


class Authenticator:
    """Checks one request's signature per `--auth` and says who sent it."""

    def __init__(self, mode: str = "relaxed", credentials: Mapping[str, tuple[str, str | None]] | None = None,
                 isolation: str = "shared", clock: Callable[[], float] = time.time) -> None:
        self.mode = mode
        self.credentials = dict(credentials or {})
        self.isolation = isolation
        self.clock = clock
        self.anonymous = Caller("", DEFAULT_REGION, DEFAULT_ACCOUNT, isolation)
        self._principals: dict[tuple[str, str], Caller] = {}  # (key, region) -> Caller, bounded
        self._scopes: dict[str, Caller] = {}  # relaxed mode: Credential=... text -> Caller, bounded
        self._prefixes: dict[bytes, Caller] = {}  # `quick`: header up to its signature -> Caller, bounded

    def principal(self, access_key: str, region: str) -> Caller:
        """The (cached) Caller of an access key signing for a region."""
        found = self._principals.get((access_key, region))
        if found is None:
            known = self.credentials.get(access_key)
            account = known[1] if known is not None and known[1] else account_from_key(access_key)
            if len(self._principals) >= 4096:
                self._principals.clear()
            found = self._principals[(access_key, region)] = Caller(access_key, region, account, self.isolation)
        return found

    def authenticate(self, method: str, path: str, query: str, headers: Headers,
                     body: bytes, target: bool = True) -> Caller:
        """The request's Caller, or the DynamoDB error refusing it. `headers`: lower-cased names;
        `target`: verify requires X-Amz-Target signed (False for dynalocal's own routes)."""
        header = headers.get("authorization")
        if header is None or not header.startswith("AWS4-"):
            if self.mode == "none":
                return self.anonymous
            if header is None and self.mode == "relaxed" and "X-Amz-Credential=" in query:
                return self._presigned(query)
            raise MissingAuthenticationTokenException(MISSING_TOKEN)
        if self.mode != "verify":
            found = self._relaxed(header)
            if found is not None:
                return found
            if self.mode == "none":  # anything goes; a readable credential scope still names the region
                return self.anonymous
        signed = parse_authorization(header)
        if self.mode == "verify":
            self._verify(signed, method, path, query, headers, body, target)
        return self.principal(signed.access_key, signed.region)

    def quick(self, header: bytes) -> Caller | None:
        """Relaxed and none modes: the Caller of a well-formed Authorization header, or None when
        `authenticate` must look closer.

        Cached by the header's text before its last `Signature=` (a client repeats it: algorithm,
        credential scope, signed headers), when that text alone makes `_relaxed` accept the header:
        then any header with the same prefix and a signature gets the same Caller."""
        if self.mode == "verify":
            return None
        cut = header.rfind(b"Signature=")
        prefix = header[:cut]
        if cut >= 0:
            found = self._prefixes.get(prefix)
            if found is not None:
                return found
        text = header.decode("latin-1")
        found = self._relaxed(text)
        if found is not None and cut >= 0 and self._relaxed(text[:cut] + "Signature=") is found:
            if len(self._prefixes) >= 4096:
                self._prefixes.clear()
            self._prefixes[prefix] = found
        return found

    def _relaxed(self, header: str) -> Caller | None:
        """The fast path of relaxed mode: a well-formed header's Caller from its credential scope
        (None: let the full parse name what is wrong)."""
        start = header.find("Credential=")
        if start < 0 or not header.startswith(ALGORITHM + " ") or "SignedHeaders=" not in header \
                or "Signature=" not in header:
            return None
        end = header.find(",", start)
        credential = header[start + 11:end if end > 0 else len(header)].strip()
        found = self._scopes.get(credential)
        if found is None:
            scope = credential.split("/")
            if len(scope) != 5 or scope[4] != "aws4_request" or not all(scope):
                return None
            if len(self._scopes) >= 4096:
                self._scopes.clear()
            found = self._scopes[credential] = self.principal(scope[0], scope[2])
        return found

    def _presigned(self, query: str) -> Caller:
        for part in query.split("&"):
            name, _, value = part.partition("=")
            if name == "X-Amz-Credential":
                scope = unquote(value).split("/")
                if len(scope) == 5:
                    return self.principal(scope[0], scope[2])
        raise MissingAuthenticationTokenException(MISSING_TOKEN)

    def _verify(self, signed: Signed, method: str, path: str, query: str, headers: Headers,
                body: bytes, target: bool) -> None:
        stamp = request_time(headers)
        if stamp is None:
            raise IncompleteSignatureException("Authorization header requires existence of either a 'X-Amz-Date' "
                                               f"or a 'Date' header. Authorization={headers.get('authorization')}")
        known = self.credentials.get(signed.access_key)
        if known is None:
            raise UnrecognizedClientException(UNRECOGNIZED)
        check_clock(stamp[1], self.clock())
        check_signed_headers(signed, "x-amz-date" if headers.get("x-amz-date") else "date", target)
        claimed = headers.get("x-amz-content-sha256")
        if claimed is not None and claimed != hashlib.sha256(body).hexdigest():
            raise InvalidSignatureException(BAD_SIGNATURE)  # a forged body, or UNSIGNED-PAYLOAD (S3 only)
        wanted = expected_signature(signed, known[0], method, path, query, headers, body, stamp[0])
        if not hmac.compare_digest(wanted, signed.signature):
            raise InvalidSignatureException(BAD_SIGNATURE)
