"""Settings of the web app, read from the environment (all optional)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from agent.context import DEFAULT_TOOL_TIMEOUT_S
from backend.access.body_limits import Limits
from backend.access.clients import ClientLimits, trusted_proxies_from_env
from backend.access.connection_limits import ServerLimits
from backend.access.login import LoginLimits
from backend.access.security import EMBEDDING_SITES, BrowserPolicy
from backend.runs.manager import RunLimits, default_max_running
from storage.location import database_url, default_data_dir


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("0", "false", "no", "off", "")


def _env_hours(name: str, default: float) -> float:
    value = (os.environ.get(name) or "").strip()
    if not value:
        return default
    hours = float(value)
    if hours < 0:
        raise ValueError(f"{name} must be 0 (keep) or more")
    return hours


def _env_float(name: str) -> float | None:
    value = (os.environ.get(name) or "").strip()
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if number <= 0:
        raise ValueError(f"{name} must be more than 0 (unset it to keep everything)")
    return number


@dataclass
class Settings:
    data_dir: Path = field(default_factory=lambda: Path("data"))
    db_url: str | None = None  # default: a SQLite file in data_dir
    host: str = "127.0.0.1"
    port: int = 7860
    config_path: Path | None = None  # catalogue TOML; default config/models.toml
    max_upload_mb: float = 200.0
    max_audio_minutes: float = 30.0
    budget: int | None = None  # tool calls per question; None: the strategy's default
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    warm_up: bool = True  # load the local models at start-up, in the background
    users: str | None = None  # AUDIO_AGENT_USERS: users file or inline pairs; turns login on
    allowed_hosts: list[str] | None = None  # Host header check; None: see backend.host.hosting
    root_path: str = ""  # public path prefix behind a reverse proxy, e.g. "/audio"
    token_days: float = 30.0  # lifetime of API bearer tokens and login cookies
    embedded: bool = False  # shown in another site's iframe (a Space): cross-site cookies
    # Runs (backend/runs/manager.py): admission, queue and per-owner limits; 0 turns a limit off.
    max_runs: int = field(default_factory=default_max_running)  # running at once (process)
    run_queue: int = 64  # waiting for a slot; past it new questions get 429
    owner_runs_per_minute: int = 60
    owner_max_runs: int = 8  # running or queued at once per owner (a compare counts each)
    daily_usd: float | None = None  # remote-model spend per owner per UTC day; None: no limit
    worker_id: str | None = None  # this process in the runs table; default host:pid:random
    heartbeat_s: float = 2.0  # lease refresh of running runs
    lease_s: float = 15.0  # a running run without a heartbeat this long is interrupted
    # Delete conversations untouched for this many days (at start-up, then every
    # retention_every_s); None keeps them forever.
    retention_days: float | None = None
    retention_every_s: float = 3600.0
    limits: Limits = field(default_factory=Limits)  # request sizes and per-owner upload quotas
    # A public link (docs/hosting.md, docs/configuration.md): limits per client address, the
    # proxies whose X-Forwarded-For is believed, what other sites' pages may do, the server's
    # own limits.
    client_limits: ClientLimits = field(default_factory=ClientLimits)
    trusted_proxies: list[str] = field(default_factory=lambda: ["127.0.0.1", "::1"])
    browser: BrowserPolicy | None = None  # None: from ``embedded`` (see ``browser_policy``)
    server_limits: ServerLimits = field(default_factory=ServerLimits)
    login_limits: LoginLimits = field(default_factory=LoginLimits)
    upload_ttl_hours: float = 24.0  # page uploads and never-asked-about uploads; 0 keeps them
    min_free_disk_mb: float = 500.0  # uploads are refused (507) below this much free space
    stall_s: float = 300.0  # a live process's runs are taken over after this long without beat

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            # AUDIO_AGENT_DATA_DIR; on a Space with persistent storage /data (storage/location.py)
            data_dir=default_data_dir(env),
            db_url=env.get("AUDIO_AGENT_DB_URL") or None,
            # On a Hugging Face Space (SPACE_ID set) the app must listen on every interface.
            host=env.get("AUDIO_AGENT_HOST")
            or env.get("GRADIO_SERVER_NAME")
            or ("0.0.0.0" if env.get("SPACE_ID") else "127.0.0.1"),
            port=int(
                env.get("AUDIO_AGENT_PORT")
                or env.get("PORT")
                or env.get("GRADIO_SERVER_PORT")
                or "7860"
            ),
            config_path=Path(env["AUDIO_AGENT_CONFIG"]) if env.get("AUDIO_AGENT_CONFIG") else None,
            max_upload_mb=float(env.get("AUDIO_AGENT_MAX_UPLOAD_MB", "200")),
            max_audio_minutes=float(env.get("AUDIO_AGENT_MAX_AUDIO_MINUTES", "30")),
            budget=int(env["AUDIO_AGENT_BUDGET"]) if env.get("AUDIO_AGENT_BUDGET") else None,
            tool_timeout_s=float(
                env.get("AUDIO_AGENT_TOOL_TIMEOUT_S", str(DEFAULT_TOOL_TIMEOUT_S))
            ),
            warm_up=_env_bool("AUDIO_AGENT_WARM_UP", True),
            users=env.get("AUDIO_AGENT_USERS") or None,
            allowed_hosts=[
                h.strip() for h in env["AUDIO_AGENT_ALLOWED_HOSTS"].split(",") if h.strip()
            ]
            if env.get("AUDIO_AGENT_ALLOWED_HOSTS")
            else None,
            root_path=env.get("AUDIO_AGENT_ROOT_PATH", "").rstrip("/"),
            token_days=float(env.get("AUDIO_AGENT_TOKEN_DAYS", "30")),
            embedded=_env_bool("AUDIO_AGENT_EMBEDDED", bool(env.get("SPACE_ID"))),
            retention_days=_env_float("AUDIO_AGENT_RETENTION_DAYS"),
            limits=Limits.from_env(env),
            max_runs=int(env.get("AUDIO_AGENT_MAX_RUNS") or default_max_running()),
            run_queue=int(env.get("AUDIO_AGENT_RUN_QUEUE", "64")),
            owner_runs_per_minute=int(env.get("AUDIO_AGENT_RUNS_PER_MINUTE", "60")),
            owner_max_runs=int(env.get("AUDIO_AGENT_OWNER_MAX_RUNS", "8")),
            daily_usd=float(env["AUDIO_AGENT_DAILY_USD"]) if env.get("AUDIO_AGENT_DAILY_USD")
            else None,
            worker_id=env.get("AUDIO_AGENT_WORKER_ID") or None,
            heartbeat_s=float(env.get("AUDIO_AGENT_HEARTBEAT_S", "2")),
            lease_s=float(env.get("AUDIO_AGENT_LEASE_S", "15")),
            client_limits=ClientLimits.from_env(env),
            trusted_proxies=trusted_proxies_from_env(env),
            browser=BrowserPolicy.from_env(
                env, embedded=_env_bool("AUDIO_AGENT_EMBEDDED", bool(env.get("SPACE_ID")))
            ),
            server_limits=ServerLimits.from_env(env),
            login_limits=LoginLimits.from_env(env),
            upload_ttl_hours=_env_hours("AUDIO_AGENT_UPLOAD_TTL_HOURS", 24.0),
            min_free_disk_mb=float(env.get("AUDIO_AGENT_MIN_FREE_DISK_MB") or 500),
            stall_s=float(env.get("AUDIO_AGENT_STALL_S") or 300),
        )  # fmt: skip

    def run_limits(self) -> RunLimits:
        capacity = self.max_runs + self.run_queue
        address_max = self.client_limits.max_runs
        return RunLimits(
            max_running=self.max_runs,
            max_queued=self.run_queue,
            owner_runs_per_minute=self.owner_runs_per_minute,
            owner_max_running=self.owner_max_runs,
            owner_daily_usd=self.daily_usd,
            address_runs_per_minute=self.client_limits.runs_per_minute,
            # Fairness: one address holds at most a quarter of the server's capacity (2 at least).
            address_max_running=address_max if address_max is not None else max(2, capacity // 4),
        )

    def browser_policy(self) -> BrowserPolicy:
        return self.browser or BrowserPolicy(
            frame_ancestors=list(EMBEDDING_SITES) if self.embedded else [],
            embedded=self.embedded,
        )

    @property
    def database_url(self) -> str:
        return database_url(self.data_dir, self.db_url)
