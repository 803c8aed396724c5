"""The one error the service raises: a request it cannot serve, said so a person can act on.

Its own module, below everything that raises it (``access.body_limits``, ``service``,
``http.sharing``) and everything that turns it into a response (the REST routes, the UI).
"""

from __future__ import annotations


class ServiceError(ValueError):
    """A request that cannot be served, with a message for the person who made it."""

    def __init__(self, message: str, status: int = 400, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after  # seconds, sent as Retry-After (429)
