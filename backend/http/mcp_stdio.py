"""``python -m backend.http.mcp_stdio`` (or ``python -m agent mcp``): the MCP server over stdio.

For desktop clients that start a local process (Claude Desktop, VS Code, Cursor). The process
opens the same data directory and database as the web app (``AUDIO_AGENT_DATA_DIR``,
``AUDIO_AGENT_DB_URL``; several processes on one database are supported), so its runs are
stored like the app's. They belong to the owner of ``--key`` (a key from the app's
``/connect`` page, or a token from ``POST /api/token``): then they appear in that browser's
history. Without a key they belong to the local owner. ``upload_audio`` also takes a ``path``
here: the files are the user's own.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading

import anyio

from backend.host.settings import Settings
from backend.host.startup import identity_for, open_service
from backend.http.mcp_server import AudioMcp, Caller, client_name
from backend.service import AgentService
from storage.models import DEFAULT_OWNER

log = logging.getLogger("audio_agent.mcp")
KEY_ENV = "AUDIO_AGENT_KEY"


def local_base_url(settings: Settings) -> str:
    """Where the web app of the same settings serves its pages and traces."""
    host = settings.host if settings.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}{settings.root_path}"


def owner_of_key(service: AgentService, key: str | None) -> str | None:
    """The owner a key names (None: not valid here, e.g. logged out); no key: the local owner."""
    if not key:
        return DEFAULT_OWNER
    return identity_for(service.settings, service).owner_from_token(key.strip())


async def serve(service: AgentService, owner: str, base_url: str) -> None:
    from mcp.server.stdio import stdio_server

    mcp = AudioMcp(service, lambda ctx: Caller(owner, base_url, client_name(ctx)), local_files=True)
    async with stdio_server() as (read, write):
        await mcp.server.run(read, write, mcp.server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent mcp",
        description="The MCP server over stdin/stdout, for clients that start it themselves.",
    )
    parser.add_argument(
        "--key",
        default=os.environ.get(KEY_ENV),
        help=f"a key from the app's /connect page or an API token (default: ${KEY_ENV}); "
        "the runs are then that owner's, in its history in the browser",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub at run time
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the protocol
    settings = Settings.from_env()
    service = open_service(settings)
    owner = owner_of_key(service, args.key)
    if owner is None:
        service.close()
        print(
            "error: the key is not valid for this data directory (expired, logged out, from "
            "another server, or login was switched on or off since); get a new one from "
            "/connect.",
            file=sys.stderr,
        )
        return 2
    if settings.warm_up:
        from agent.registry import warm_up

        threading.Thread(target=warm_up, args=(log.warning,), daemon=True).start()
    try:
        anyio.run(serve, service, owner, local_base_url(settings))
    except KeyboardInterrupt:
        pass
    finally:
        service.close()  # live runs end as interrupted, their events kept
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
