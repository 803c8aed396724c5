"""What a remote call costs, priced when it happens.

Prices change while a process runs: DeepSeek charges more at peak hours of the day,
Gemini's prices change on a date, a cache read costs a fraction of a fresh input token.
So an entry keeps *where* its prices come from (its model in the ``genai-prices``
library) and every call is priced at its own time by the library itself
(``genai_prices.calc_price``: the prices for that moment, long-prompt tiers, cache reads at
the cache price, audio tokens at the audio price). The catalogue's ``prices`` table
overrides, field by field, only what the library does not know (or prices an entry the
library has never heard of); such entries are priced here from the same fields.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

from agent.events import Usage
from agent.plugins import PROVIDERS_GROUP, registry


def utc_now() -> datetime:
    """The clock calls are priced by (tests move it)."""
    return datetime.now(UTC)


# genai-prices provider id -> the moment whose prices a call at ``when`` is billed at, for a
# provider whose schedule the library reads wrong (registered by its provider module:
# ``agent.providers.deepseek``)
_BILLING_CLOCKS: dict[str, Callable[[datetime], datetime]] = {}


def register_billing_clock(provider_id: str, clock: Callable[[datetime], datetime]) -> None:
    _BILLING_CLOCKS[provider_id] = clock


def billing_time(ref: tuple[str, str], when: datetime) -> datetime:
    """``when``, moved where the provider's own schedule and the library's disagree."""
    registry(PROVIDERS_GROUP).load()  # the provider modules register their clocks
    clock = _BILLING_CLOCKS.get(ref[0])
    return clock(when) if clock else when


@dataclass(frozen=True)
class Prices:
    """US dollars: per million tokens, per minute of audio, per request.

    The numbers are the prices at the time the object was made (what the catalogue
    shows); ``cost`` prices a call at its own time when the prices come from the library.
    """

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cache_read_per_mtok: float = 0.0  # 0: cache reads cost the input price
    audio_input_per_mtok: float = 0.0  # 0: audio tokens cost the input price
    per_audio_minute: float = 0.0
    per_request: float = 0.0

    source: str = "none"  # "genai-prices", "catalogue", "genai-prices + catalogue" or "none"
    # (provider id, model id) in genai-prices: the prices are read again for each call
    ref: tuple[str, str] | None = None
    overrides: tuple[tuple[str, float], ...] = ()  # the catalogue's own numbers

    @property
    def known(self) -> bool:
        return self.source != "none"

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> Prices:
        overrides = _overrides(raw)
        return cls(**dict(overrides), source="catalogue" if raw else "none")

    @classmethod
    def for_entry(
        cls, raw: Mapping[str, Any], when: datetime | None = None, base_url: str | None = None
    ) -> Prices:
        """Prices from ``genai-prices`` where it knows the model (``price_ref``, else the
        provider, else the entry's fixed base URL, as for OpenRouter or Moonshot), with the
        catalogue's ``prices`` table overriding field by field only what it sets."""
        ref = library_ref(raw, base_url or raw.get("base_url"))
        overrides = _overrides(raw.get("prices"))
        if ref is None:
            return cls.from_config(raw.get("prices"))
        source = "genai-prices + catalogue" if overrides else "genai-prices"
        return cls(ref=ref, overrides=overrides, source=source).at(when or utc_now())

    def at(self, when: datetime) -> Prices:
        """The prices in force at ``when`` (the library's for that moment, then overrides)."""
        if self.ref is None:
            return self
        values = _library_values(self.ref, when)
        values.update(dict(self.overrides))
        return replace(self, **values)

    def cost(
        self,
        usage: Usage,
        *,
        audio_tokens: int = 0,
        requests: int = 1,
        when: datetime | None = None,
    ) -> float:
        """The price of one call made at ``when`` (default: now) with this usage.

        ``usage.input_tokens`` counts every input token; of those, ``cache_read_tokens``
        cost the cache price and ``audio_tokens`` the audio price (the input price when the
        model has no separate one, as Gemini 3.x Flash)."""
        when = when or utc_now()
        if self.ref is not None and not self.overrides:
            library = _library_cost(self.ref, usage, audio_tokens, when)
            if library is not None:
                return library
        price = self.at(when)
        cached = min(max(0, usage.cache_read_tokens), usage.input_tokens)
        audio = min(max(0, audio_tokens), usage.input_tokens - cached)
        text_input = max(0, usage.input_tokens - cached - audio)
        return round(
            text_input * price.input_per_mtok / 1e6
            + cached * (price.cache_read_per_mtok or price.input_per_mtok) / 1e6
            + audio * (price.audio_input_per_mtok or price.input_per_mtok) / 1e6
            + usage.output_tokens * price.output_per_mtok / 1e6
            + usage.audio_seconds / 60 * price.per_audio_minute
            + requests * price.per_request,
            8,
        )


_NUMBERS = tuple(f.name for f in fields(Prices) if f.type in ("float", float))


def _overrides(raw: Mapping[str, Any] | None) -> tuple[tuple[str, float], ...]:
    return tuple((k, float(v)) for k, v in (raw or {}).items() if k in _NUMBERS)


def library_ref(raw: Mapping[str, Any], base_url: str | None = None) -> tuple[str, str] | None:
    """Where ``genai-prices`` keeps the entry's model, or None if it does not know it.

    ``price_ref = "provider:model"`` names the library's entry; ``price_ref = false`` opts
    out; ``price_provider = "openrouter"`` names the library's provider and the entry's own
    model id is looked up there (so the price does not depend on the URL: the same entry
    behind a gateway, a proxy or ``<PROVIDER>_BASE_URL`` costs what the provider charges);
    otherwise an entry whose provider has a ``price_id`` (OpenAI, Gemini) is looked up
    by model id, and another entry by its fixed base URL.
    Self-hosted servers (a base URL from a variable) cost nothing.
    """
    ref = raw.get("price_ref")
    if ref is False or raw.get("provider") == "local":
        return None
    model_id = str(raw.get("model") or "")
    provider_id: str | None = None
    url: str | None = None
    if ref:
        provider_id, _, model_id = str(ref).partition(":")
    elif raw.get("price_provider"):
        provider_id = str(raw["price_provider"])
    elif price_id := _price_id(str(raw.get("provider"))):
        provider_id = price_id
    elif base_url and not raw.get("base_url_env"):
        url = base_url
    if not model_id or not (provider_id or url):
        return None
    return _find(model_id, provider_id, url)


def _price_id(provider: str) -> str | None:
    """The provider's own id in genai-prices, if it prices by model id (its ``price_id``)."""
    return getattr(registry(PROVIDERS_GROUP).get(provider), "price_id", None)


@functools.lru_cache(maxsize=256)
def _find(model_id: str, provider_id: str | None, url: str | None) -> tuple[str, str] | None:
    try:
        from genai_prices import data_snapshot
    except ImportError:  # pragma: no cover - it is in requirements.txt
        return None
    try:
        provider, model = data_snapshot.get_snapshot().find_provider_model(
            model_id, None, provider_id, url
        )
    except LookupError:
        return None
    return provider.id, model.id


@functools.lru_cache(maxsize=256)
def _model(ref: tuple[str, str]) -> Any:
    from genai_prices import data_snapshot

    return data_snapshot.get_snapshot().find_provider_model(ref[1], None, ref[0], None)[1]


def _library_values(ref: tuple[str, str], when: datetime) -> dict[str, float]:
    """The library's prices for ``ref`` at ``when`` (tiered prices: the base tier)."""
    price = _model(ref).get_prices(billing_time(ref, when))

    def per(name: str) -> float:
        value = getattr(price, name, None)
        value = getattr(value, "base", value)  # TieredPrices: the base tier
        return float(value) if value is not None else 0.0

    return {
        "input_per_mtok": per("input_mtok"),
        "output_per_mtok": per("output_mtok"),
        "cache_read_per_mtok": per("cache_read_mtok"),
        "audio_input_per_mtok": per("input_audio_mtok"),
        "per_audio_minute": per("input_audio_hours") / 60 or per("audio_hours") / 60,
    }


def _library_cost(
    ref: tuple[str, str], usage: Usage, audio_tokens: int, when: datetime
) -> float | None:
    """The library's own price of the call (None if it cannot price this usage)."""
    from genai_prices import Usage as LibraryUsage
    from genai_prices import calc_price

    counts: dict[str, int | float] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": min(usage.cache_read_tokens, usage.input_tokens),
        "input_audio_tokens": audio_tokens,
    }
    if usage.audio_seconds:  # models priced by the minute of audio (transcription)
        counts["audio_seconds"] = counts["input_audio_seconds"] = usage.audio_seconds
    try:
        found = calc_price(
            LibraryUsage(**{k: v for k, v in counts.items() if v}),
            ref[1],
            provider_id=ref[0],
            genai_request_timestamp=billing_time(ref, when),
        )
    except (LookupError, ValueError, TypeError):
        return None
    return round(float(found.total_price), 8)


def library_prices(raw: Mapping[str, Any], when: datetime | None = None) -> Prices | None:
    """What ``genai-prices`` says the entry's model costs at ``when`` (None: unknown)."""
    ref = library_ref(raw, raw.get("base_url"))
    if ref is None:
        return None
    return Prices(ref=ref, source="genai-prices").at(when or utc_now())
