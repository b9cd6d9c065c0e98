"""SASL/OAUTHBEARER (RFC 7628) with unsecured JWS tokens (``alg: none``), as Kafka's default
development validator checks them: a principal claim (``sub``), an expiry (``exp``), ``iat``
not in the future, the required scope; tolerance ``unsecuredValidatorAllowableClockSkewMs``.
A token that fails is answered with Kafka's JSON error as a challenge; the client then sends
0x01 and the exchange fails with that JSON as the message."""

from __future__ import annotations

import base64
import binascii
import json
import re

from security.sasl.errors import AuthenticationFailed

_INITIAL = re.compile(r"n,(a=(?P<authzid>[^,]*))?,\x01(?P<kvpairs>([A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01")
_AUTH = re.compile(r"(?P<scheme>[\w]+)[ ]+(?P<token>[-_~+/.a-zA-Z0-9]+=*)")


class OAuthBearerServer:
    mechanism = "OAUTHBEARER"

    def __init__(self, options: dict[str, str], now_ms):
        self.principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "sub")
        self.scope_claim = options.get("unsecuredValidatorScopeClaimName", "scope")
        self.required_scope = options.get("unsecuredValidatorRequiredScope", "").split()
        self.skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0"))
        self.now_ms = now_ms
        self.user: str | None = None
        self.complete = False
        self.lifetime_end_ms: int | None = None      # the token's exp, which bounds the session
        self._failed: str | None = None               # the JSON error already sent as a challenge

    def evaluate(self, token: bytes) -> bytes:
        if self._failed is not None:                   # the client's 0x01 after our error
            raise AuthenticationFailed(self._reason, client_message=self._failed, user=self.user)
        match = _INITIAL.fullmatch(token.decode("utf-8", errors="replace"))
        if match is None:
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message")
        pairs = dict(item.split("=", 1) for item in match["kvpairs"].split("\x01") if item)
        if "auth" not in pairs:
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message: 'auth' not specified")
        auth = _AUTH.fullmatch(pairs["auth"])
        if auth is None or auth["scheme"].lower() != "bearer":
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        try:
            claims = self._validate(auth["token"])
        except _InvalidToken as e:
            self._reason = f"invalid token: {e}"
            self._failed = e.json
            return e.json.encode()
        name = claims[self.principal_claim]
        if match["authzid"] and match["authzid"] != name:
            message = (f"Authentication failed: Client requested an authorization id ({match['authzid']}) that is "
                       f"different from the token's principal name ({name})")
            raise AuthenticationFailed(message, client_message=message, user=name)
        self.user, self.complete = name, True
        self.lifetime_end_ms = int(claims["exp"] * 1000)
        return b""

    def _validate(self, token: str) -> dict:
        parts = token.split(".")
        if len(parts) != 3 or not parts[0] or not parts[1]:
            raise _InvalidToken("an unsecured JWS has three dot-separated parts, the last empty")
        header, claims = _json_part(parts[0]), _json_part(parts[1])
        if header.get("alg") != "none":
            raise _InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise _InvalidToken("Unsecured JWS must not contain a digital signature")
        if not isinstance(claims.get("exp"), (int, float)):
            raise _InvalidToken("No expiration time in JWT")
        name = claims.get(self.principal_claim)
        if not isinstance(name, str) or not name.strip():
            raise _InvalidToken(f"No principal name in JWT claim: {self.principal_claim}")
        now = self.now_ms()
        iat = claims.get("iat")
        if isinstance(iat, (int, float)) and iat * 1000 > now + self.skew_ms:
            raise _InvalidToken(f"The indicated time ({iat * 1000:.0f} ms) is in the future")
        if now - self.skew_ms >= claims["exp"] * 1000:
            raise _InvalidToken(f"The indicated time ({claims['exp'] * 1000:.0f} ms) has passed")
        if isinstance(iat, (int, float)) and claims["exp"] <= iat:
            raise _InvalidToken("The expiration time is not after the issued-at time")
        scope = claims.get(self.scope_claim, [])
        scope = [scope] if isinstance(scope, str) else list(scope)
        missing = [s for s in self.required_scope if s not in scope]
        if missing:
            raise _InvalidToken(f"the token lacks the required scope {missing}",
                                json_text=json.dumps({"status": "insufficient_scope",
                                                      "scope": f"[{', '.join(self.required_scope)}]"},
                                                     separators=(", ", ":")))
        return claims


class _InvalidToken(Exception):
    def __init__(self, reason: str, json_text: str = '{"status":"invalid_token"}'):
        super().__init__(reason)
        self.json = json_text


def _json_part(part: str) -> dict:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError) as e:
        raise _InvalidToken(f"malformed Base64 URL encoded value: {e}") from None
    if not isinstance(decoded, dict):
        raise _InvalidToken("a JWS part is not a JSON object")
    return decoded
