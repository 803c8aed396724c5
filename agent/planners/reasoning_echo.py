"""A thinking model's reasoning, kept from its turn and sent back next to its tool calls.

DeepSeek in thinking mode, Kimi K2 and Qwen3 behind vLLM's reasoning parser return their
reasoning in a field beside the message (``reasoning_content``, or ``reasoning`` in newer
vLLM); OpenRouter returns ``reasoning_details`` (a list of typed blocks, some encrypted).
DeepSeek and Kimi refuse the next request when an assistant message with tool calls comes
back without its reasoning; OpenRouter passes the same refusal on from the provider behind
it. So a turn's reasoning is recorded exactly as it arrived (``TurnEnd.raw``) and, for an
entry the catalogue marks ``thinking = true``, ``attach`` puts it back on that assistant
message, in the field it came in (or the entry's ``reasoning_field``).

Sources: https://api-docs.deepseek.com/guides/thinking_mode (tool calls: "the
reasoning_content must be fully passed back to the API in all subsequent requests"),
https://platform.kimi.ai/docs/guide/use-kimi-k2-thinking-model,
https://openrouter.ai/docs/guides/best-practices/reasoning-tokens (preserving reasoning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TEXT_FIELDS = ("reasoning_content", "reasoning")
DETAILS_FIELD = "reasoning_details"
_JOINED = ("text", "summary", "data")  # the parts of a detail block that stream in pieces


@dataclass
class ReasoningRecord:
    """The reasoning of one model turn, gathered from a message or from stream deltas."""

    text_field: str | None = None  # the field the text came in
    parts: list[str] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)

    def add(self, message: Any) -> str:
        """Take the reasoning fields of a message or delta; returns its new reasoning text."""
        new = ""
        for name in TEXT_FIELDS:
            value = _field(message, name)
            if isinstance(value, str):
                self.text_field = self.text_field or name
                if value and name == self.text_field:
                    self.parts.append(value)
                    new = value
        blocks = _field(message, DETAILS_FIELD)
        if isinstance(blocks, list):
            for block in blocks:
                if isinstance(block, dict):
                    self._merge(block)
                elif hasattr(block, "model_dump"):
                    self._merge(block.model_dump(exclude_none=True))
            if not new:  # only the typed blocks carry readable text
                new = "".join(
                    str(b.get("text") or b.get("summary") or "")
                    for b in blocks
                    if isinstance(b, dict)
                )
        return new

    def _merge(self, block: dict[str, Any]) -> None:
        """Stream deltas carry pieces of the same block (same index and type): join them."""
        last = self.details[-1] if self.details else None
        same = (
            last is not None
            and last.get("type") == block.get("type")
            and last.get("index", 0) == block.get("index", 0)
        )
        if not same:
            self.details.append(dict(block))
            return
        assert last is not None
        for key, value in block.items():
            if key in _JOINED and isinstance(value, str) and isinstance(last.get(key), str):
                last[key] += value
            elif value is not None:
                last[key] = value

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def raw(self) -> dict[str, Any]:
        """What ``TurnEnd.raw`` keeps: the mark of a turn the model made itself, and its
        reasoning as it arrived (None when the turn carried no reasoning field)."""
        record: dict[str, Any] | None = None
        if self.text_field is not None or self.details:
            record = {"text": self.text, "field": self.text_field}
            if self.details:
                record["details"] = self.details
        return {"chat_turn": True, "reasoning": record}


def own_turn(raw: Any) -> bool:
    """Whether an assistant message is a turn the model made (not one the app wrote)."""
    return isinstance(raw, dict) and raw.get("chat_turn") is True


def attach(
    item: dict[str, Any],
    raw: Any,
    *,
    rename: str | None,
    thinking: bool,
    send_empty: bool = True,
) -> None:
    """Put a turn's reasoning back on its assistant message, as the provider sent it.

    ``rename``: the field this server takes it back in, when that differs from the field
    it came in (``reasoning_field`` in the catalogue). A thinking model's own turn that
    came with no reasoning at all goes back with an empty one: the model produced none,
    and the field must be there (DeepSeek and Kimi refuse a tool-call turn without it;
    Moonshot's own kimi-cli sends ``""``: https://github.com/MoonshotAI/kimi-cli/pull/2498).
    ``send_empty = False`` leaves an empty one out instead, for a deployment that refuses
    ``""`` (Kimi K2.6 in one report: https://github.com/earendil-works/pi/issues/4251;
    the planner switches after that 400, see ``OpenAICompatPlanner``).
    """
    if not own_turn(raw):
        return
    record = raw.get("reasoning")
    if not isinstance(record, dict):
        if thinking and send_empty:
            item[rename or "reasoning_content"] = ""
        return
    if record.get("details"):
        item[DETAILS_FIELD] = record["details"]
        if rename and rename != DETAILS_FIELD:
            item[rename] = record.get("text", "")
        return
    if record.get("text") or send_empty:
        item[rename or record.get("field") or "reasoning_content"] = record.get("text", "")


def refuses_reasoning_form(exc: BaseException, request: dict[str, Any]) -> bool:
    """A 400 about ``reasoning_content`` for a request that sent an empty one or left one
    out: the server wants the other form (``""`` or nothing) for a turn without reasoning."""
    message = str(getattr(exc, "message", "") or exc).lower()
    if getattr(exc, "status_code", None) != 400 or "reasoning_content" not in message:
        return False
    return any(
        isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
        and not m.get("reasoning_content") and not m.get(DETAILS_FIELD)
        for m in request.get("messages") or []
    )  # fmt: skip


def _field(message: Any, name: str) -> Any:
    if isinstance(message, dict):
        return message.get(name)
    value = getattr(message, name, None)
    if value is None:
        extra = getattr(message, "model_extra", None) or {}
        value = extra.get(name)
    return value
