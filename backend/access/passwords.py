"""Password hashes for the users file (``AUDIO_AGENT_USERS``), and checking a login in the
same time whoever the user is.

- ``hash_password``: ``scrypt$N$r$p$salt$hash`` at the strength the OWASP Password Storage
  Cheat Sheet asks for when Argon2id is not at hand: N=2^17, r=8, p=1 (128 MiB and about a
  third of a second per hash). Python's ``hashlib.scrypt`` refuses anything over 32 MiB
  unless told otherwise, so ``maxmem`` is computed from the parameters (``scrypt_maxmem``).
- ``verify_password``: a scrypt or ``pbkdf2_sha256$ROUNDS$SALT$HASH`` entry, or (anything
  else) the password itself in plain text. Parameters beyond ``MAX_SCRYPT_N`` are refused
  rather than run (a users-file line must not make a login take a gigabyte).
- ``check_login``: exactly one hash at the default strength for every attempt, whether the
  user exists, has a hash or a plain-text password: an unknown name takes as long as a known
  one. At most ``CONCURRENT_HASHES`` run at once (each takes 128 MiB).
- ``weakness``: why a users-file entry is below that strength (logged at start-up).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading

SCRYPT_N = 2**17  # OWASP: scrypt with N >= 2^17, r = 8, p = 1
SCRYPT_R = 8
SCRYPT_P = 1
MAX_SCRYPT_N = 2**20  # 1 GiB at r = 8: more than any users file should ask
PBKDF2_MIN_ROUNDS = 600_000  # OWASP: PBKDF2-HMAC-SHA256 with 600,000 iterations
CONCURRENT_HASHES = 2

_hashing = threading.BoundedSemaphore(CONCURRENT_HASHES)
_dummy: str | None = None
_dummy_lock = threading.Lock()


def scrypt_maxmem(n: int, r: int, p: int) -> int:
    """Memory scrypt needs (OpenSSL: 128·r·(N+2) for V plus 128·r·p for B), with room."""
    return 128 * r * (n + 2) + 128 * r * p + 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """``scrypt$n$r$p$salt$hash`` (salt and hash in URL-safe base64)."""
    salt = secrets.token_bytes(16)
    with _hashing:
        digest = hashlib.scrypt(
            password.encode(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=scrypt_maxmem(n, r, p)
        )
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, spec: str) -> bool:
    """Check ``password`` against a users-file entry (see the module doc)."""
    parts = spec.split("$")
    try:
        if parts[0] == "scrypt" and len(parts) == 6:
            n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
            if not 1 < n <= MAX_SCRYPT_N or not 0 < r <= 32 or not 0 < p <= 16:
                return False
            salt, want = _unb64(parts[4]), _unb64(parts[5])
            with _hashing:
                got = hashlib.scrypt(
                    password.encode(),
                    salt=salt,
                    n=n,
                    r=r,
                    p=p,
                    dklen=len(want),
                    maxmem=scrypt_maxmem(n, r, p),
                )
            return hmac.compare_digest(got, want)
        if parts[0] == "pbkdf2_sha256" and len(parts) == 4:
            rounds, salt, want = int(parts[1]), _unb64(parts[2]), _unb64(parts[3])
            if not 0 < rounds <= 10_000_000:
                return False
            with _hashing:
                got = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, rounds, len(want))
            return hmac.compare_digest(got, want)
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(password.encode(), spec.encode())


def is_hash(spec: str) -> bool:
    parts = spec.split("$")
    return (parts[0] == "scrypt" and len(parts) == 6) or (
        parts[0] == "pbkdf2_sha256" and len(parts) == 4
    )


def _dummy_hash() -> str:
    """A hash at the default strength of a password nobody knows (made once)."""
    global _dummy
    with _dummy_lock:
        if _dummy is None:
            _dummy = hash_password(secrets.token_urlsafe(16))
        return _dummy


def warm_up() -> None:
    """Make the default-strength hash that unknown names are checked against (once)."""
    _dummy_hash()


def check_login(password: str, spec: str | None) -> bool:
    """Whether ``password`` matches ``spec`` (None: no such user), in the time of one hash
    at the default strength for a missing user and a plain-text entry alike."""
    if spec is None:
        verify_password(password, _dummy_hash())
        return False
    if not is_hash(spec):
        verify_password(password, _dummy_hash())
        return hmac.compare_digest(password.encode(), spec.encode())
    return verify_password(password, spec)


def weakness(spec: str) -> str | None:
    """Why an entry is below OWASP strength (plain text, weak parameters), or None."""
    parts = spec.split("$")
    try:
        if parts[0] == "scrypt" and len(parts) == 6:
            n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
            if n > MAX_SCRYPT_N:
                return f"scrypt N={n} is over the limit of {MAX_SCRYPT_N}: it will never match"
            if n < SCRYPT_N or r < SCRYPT_R or p < 1:
                return f"scrypt N={n}, r={r}, p={p} is below N={SCRYPT_N}, r={SCRYPT_R}, p=1"
            return None
        if parts[0] == "pbkdf2_sha256" and len(parts) == 4:
            rounds = int(parts[1])
            if rounds < PBKDF2_MIN_ROUNDS:
                return f"pbkdf2_sha256 with {rounds:,} rounds is below {PBKDF2_MIN_ROUNDS:,}"
            return None
    except ValueError:
        return "a malformed hash: it will never match"
    return "a plain-text password"
