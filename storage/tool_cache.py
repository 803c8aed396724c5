"""The tool cache: ``Store``'s reads and writes of the ``tool_cache`` table (written behind
the runs by ``storage.cache_writes``), and ``SqlToolCache``, the agent's ``ToolCache`` over
them."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from agent.events import ToolResult
from storage.cache_writes import CacheWrites
from storage.models import ToolCacheEntry, utc_now
from storage.store_base import engine_of, retried


class ToolCacheStore:
    """The tool cache part of ``Store``, with the rows and hit counts it writes behind the
    runs (``cache_writes``)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._engine = engine_of(sessions)
        # Tool-cache rows and hit counts written behind the runs (storage.cache_writes).
        self.cache_writes = CacheWrites(self._write_cache)

    def cache_get(self, key: str) -> ToolResult | None:
        """The cached result for ``key`` (counting a hit), or None."""
        return self.cache_get_many([key]).get(key)

    def cache_get_many(self, keys: Sequence[str]) -> dict[str, ToolResult]:
        """The cached results among ``keys`` (each found one counts a hit): results not yet
        written come from memory, the rest from one plain read; hits are written behind."""
        found: dict[str, ToolResult] = self.cache_writes.get_many(list(keys))
        rest = [k for k in dict.fromkeys(keys) if k not in found]
        if rest:
            read: dict[str, tuple[str, ToolResult]] = {}
            with self._engine.connect() as conn:
                for key, audio_id, data in conn.execute(_cache_read(), {"p_keys": rest}):
                    read[key] = (audio_id, ToolResult.model_validate(data))
            self.cache_writes.remember(read)
            found.update({key: result for key, (_, result) in read.items()})
        for key in found:
            self.cache_writes.hit(key)
        return found

    def cache_peek(self, key: str) -> ToolResult | None:
        """The cached result for ``key`` if it is in memory (counting a hit), else None
        without reading the database: for the event loop, before a read in a thread."""
        result = self.cache_writes.get(key)
        if result is not None:
            self.cache_writes.hit(key)
        return result

    def cache_put_later(self, key: str, tool: str, audio_id: str, result: ToolResult) -> None:
        """Store a tool result without waiting for the database: readers of this store see
        it at once, and it is written with others in one transaction (errors never cached)."""
        if not result.error:
            self.cache_writes.put(key, tool, audio_id, result)

    def _write_cache(
        self, rows: dict[str, tuple[str, str, ToolResult]], hits: dict[str, int]
    ) -> None:
        """One transaction for what ``cache_writes`` gathered: upserts, then hit counts."""

        retried(self._engine.begin, lambda conn: write_cache_rows(conn, rows, hits))

    def cache_hits(self, key: str) -> int | None:
        self.cache_writes.flush()
        with self._sessions() as s:
            return s.scalar(select(ToolCacheEntry.hits).where(ToolCacheEntry.key == key))

    def clear_tool_cache(self, audio_id: str | None = None) -> int:
        """Drop cached results (of one recording, or all); returns how many."""
        self.cache_writes.flush()
        self.cache_writes.forget(None if audio_id is None else {audio_id})
        stmt = delete(ToolCacheEntry)
        if audio_id is not None:
            stmt = stmt.where(ToolCacheEntry.audio_id == audio_id)
        with self._sessions.begin() as s:
            return int(s.execute(stmt).rowcount)  # type: ignore[attr-defined]


class SqlToolCache:
    """The ``agent.tools.base.ToolCache`` protocol backed by the ``tool_cache`` table.

    With ``owner``, keys are scoped to that owner: one owner's runs never read results cached
    by another's (whose speed or cost would tell that someone had the same recording).

    ``put`` does not wait for the database (``storage.cache_writes``): the result is visible
    to every reader of the store at once and written behind; ``get_many`` reads a turn's
    keys in one statement."""

    blocking = True  # get reads the database: the run calls it in a thread
    put_blocks = False  # put only hands the row over: the run calls it directly

    def __init__(self, store: ToolCacheStore, owner: str | None = None) -> None:
        self.store = store
        self.owner = owner

    def for_owner(self, owner: str) -> SqlToolCache:
        """This cache as ``owner`` sees it."""
        return SqlToolCache(self.store, owner=owner)

    def scoped(self, key: str) -> str:
        if self.owner is None:
            return key
        return hashlib.sha256(f"{self.owner}\0{key}".encode()).hexdigest()

    def get(self, key: str) -> ToolResult | None:
        return self.store.cache_get(self.scoped(key))

    def peek(self, key: str) -> ToolResult | None:
        return self.store.cache_peek(self.scoped(key))

    def get_many(self, keys: Sequence[str]) -> dict[str, ToolResult]:
        scoped = {self.scoped(k): k for k in keys}
        return {scoped[k]: r for k, r in self.store.cache_get_many(list(scoped)).items()}

    def put(self, key: str, tool: str, audio_id: str, result: ToolResult) -> None:
        self.store.cache_put_later(self.scoped(key), tool, audio_id, result)


@functools.cache
def _cache_read() -> Any:
    """The tool cache's read of a turn's keys, built once (see ``storage.run_writes``)."""
    entries = ToolCacheEntry.__table__
    keys = bindparam("p_keys", expanding=True)
    return select(entries.c.key, entries.c.audio_id, entries.c.result).where(
        entries.c.key.in_(keys)
    )


def write_cache_rows(
    conn: Connection, rows: dict[str, tuple[str, str, ToolResult]], hits: dict[str, int]
) -> None:
    """Insert or replace tool-cache rows (their hit counts kept), then add hits, on ``conn``:
    one upsert statement for all rows on SQLite and PostgreSQL, one update for all hits."""
    now = utc_now()
    values = [
        {"key": key, "tool": tool, "audio_id": audio_id, "result": result.model_dump(mode="json"),
         "created_at": now, "hits": 0}
        for key, (tool, audio_id, result) in rows.items()
    ]  # fmt: skip
    dialect = conn.dialect.name
    if values and dialect in ("sqlite", "postgresql"):
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as upsert
        else:
            from sqlalchemy.dialects.postgresql import insert as upsert
        stmt = upsert(ToolCacheEntry)
        stmt = stmt.on_conflict_do_update(
            index_elements=[ToolCacheEntry.key],
            set_={
                "tool": stmt.excluded.tool,
                "audio_id": stmt.excluded.audio_id,
                "result": stmt.excluded.result,
            },
        )
        conn.execute(stmt, values)
    for row in values if dialect not in ("sqlite", "postgresql") else []:
        changed = conn.execute(
            update(ToolCacheEntry)
            .where(ToolCacheEntry.key == row["key"])
            .values(tool=row["tool"], audio_id=row["audio_id"], result=row["result"])
        )
        if not changed.rowcount:  # type: ignore[attr-defined]
            conn.execute(insert(ToolCacheEntry).values(**row))
    if hits:
        conn.execute(
            update(ToolCacheEntry)
            .where(ToolCacheEntry.key == bindparam("hit_key"))
            .values(hits=func.coalesce(ToolCacheEntry.hits, 0) + bindparam("count")),
            [{"hit_key": key, "count": count} for key, count in hits.items()],
        )
