"""Who is asking: the owner id of a request (an anonymous visitor or a logged-in user).

Interface shared by the API routes and the Gradio handlers:

- FastAPI routes: ``owner: str = Depends(current_owner)``
- Gradio handlers: ``owner_from_request(request)`` with ``request: gr.Request``

For now every request belongs to the single local owner; the isolation work (signed
visitor cookie, optional login) replaces the body of these two functions.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from storage.models import DEFAULT_OWNER


def current_owner(request: Request) -> str:
    """The owner id of an API request."""
    return DEFAULT_OWNER


def owner_from_request(request: Any) -> str:
    """The owner id of a Gradio event (``gr.Request``) or a Starlette request."""
    return DEFAULT_OWNER
