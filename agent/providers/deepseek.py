"""DeepSeek's billing clock, where the price library reads it wrong.

DeepSeek's API is an OpenAI-compatible entry (``provider = "openai_compatible"``); what is
DeepSeek's own is when its prices apply. Since 2026-08-23 00:00 Beijing time the peak
windows (01:00-04:00 and 06:00-10:00 UTC, i.e. 09:00-12:00 and 14:00-18:00 Beijing) hold
Monday to Friday only: "Peak hours are 01:00 - 04:00 and 06:00 - 10:00 UTC, Monday through
Friday (all other hours are off-peak)" (https://api-docs.deepseek.com/quick_start/pricing/;
the page itself is not in this project's reference corpus: the wording is as quoted from it
in reports of 2026-08-22/23, e.g. https://github.com/nesquikm/mcp-rubber-duck/issues/143,
https://github.com/jeffstric/ZJT/issues/685, and a pricing guide checked 2026-10-27 that
adds "excluding Chinese public holidays", which is not modelled here). ``genai-prices``
constrains the peak prices by time of day only, so a weekend call in a peak window costs
double (https://github.com/pydantic/genai-prices/issues/582). Until it is fixed upstream a
weekend call is priced at the same day's off-peak time; ``tests/test_provider_edges.py``
fails the day the library prices weekends right, so this module can be removed then.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent.prices import register_billing_clock

BEIJING = timedelta(hours=8)
WEEKENDS_OFF_PEAK_FROM = datetime(2026, 8, 22, 16, 0, tzinfo=UTC)  # 2026-08-23 00:00 Beijing
OFF_PEAK_HOUR_UTC = 12  # 20:00 Beijing, the same calendar day: off-peak every day


def billing_time(when: datetime) -> datetime:
    """The moment whose prices the library should use for a call made at ``when``."""
    if when < WEEKENDS_OFF_PEAK_FROM:
        return when
    in_beijing = (when.astimezone(UTC) + BEIJING).weekday()
    if in_beijing >= 5 and when.astimezone(UTC).hour < 16:  # the Beijing day is this UTC day
        return when.astimezone(UTC).replace(hour=OFF_PEAK_HOUR_UTC, minute=0, second=0)
    return when


register_billing_clock("deepseek", billing_time)
