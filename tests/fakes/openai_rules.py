"""OpenAI's refusals (Chat Completions, Responses, transcriptions), as users reported them."""

from __future__ import annotations

from typing import Any

from tests.fakes.rules import Body, Refusal, deepseek_error, openai_error, refusal, rule

VERIFY = (
    "Please go to: https://platform.openai.com/settings/organization/general and click on "
    "Verify Organization. If you just verified, it can take up to 15 minutes for access to "
    "propagate."
)


def _messages(body: Body) -> list[dict[str, Any]]:
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


@rule(
    provider="OpenAI",
    endpoint="chat responses",
    rule="A reasoning model takes only its default temperature",
    we_do="`supports_temperature = false`: no temperature is sent; `evidence` varies the "
    "evidence order and the prompt instead",
    source="https://github.com/gabrii/Cursor-Azure-GPT-5/issues/33",
)
def reasoning_model_temperature(body: Body, strict: Any) -> Refusal | None:
    value = body.get("temperature")
    if strict.flavor != "openai" or not strict.reasoning or value in (None, 1):
        return None
    if "input" in body:  # the Responses API words it as an unknown parameter
        return refusal(
            "reasoning_model_temperature",
            openai_error(
                "Unsupported parameter: 'temperature' is not supported with this model.",
                "temperature",
                "unsupported_parameter",
            ),
        )
    return refusal(
        "reasoning_model_temperature",
        openai_error(
            f"Unsupported value: 'temperature' does not support {value} with this model. "
            "Only the default (1) value is supported.",
            "temperature",
            "unsupported_value",
        ),
    )


@rule(
    provider="OpenAI",
    endpoint="chat",
    rule="A reasoning model refuses `max_tokens`",
    we_do="`max_tokens_param` names the field (`max_completion_tokens`, `max_output_tokens`)",
    source="https://github.com/griptape-ai/ComfyUI-Griptape/issues/312",
)
def max_tokens_name(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor == "openai" and strict.reasoning and "max_tokens" in body:
        return refusal(
            "max_tokens_name",
            openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
            ),
        )
    return None


@rule(
    provider="OpenAI",
    endpoint="chat responses",
    rule="An organisation that is not verified may not stream the model",
    we_do="the same turn again without streaming, remembered for the process",
    source="https://github.com/charmbracelet/crush/issues/422",
)
def stream_unverified(body: Body, strict: Any) -> Refusal | None:
    if strict.refuse_stream and body.get("stream"):
        return refusal(
            "stream_unverified",
            openai_error(
                f"Your organization must be verified to stream this model. {VERIFY}",
                "stream",
                "unsupported_value",
            ),
        )
    return None


@rule(
    provider="OpenAI",
    endpoint="responses",
    rule="An organisation that is not verified gets no reasoning summaries "
    "(400 on `reasoning.summary`)",
    we_do="`reasoning_summary` in the catalogue; on this 400 the turn is asked again once "
    "without it, remembered for the process, and the trace says why there is no summary",
    source="https://github.com/continuedev/continue/issues/9854",
)
def summary_unverified(body: Body, strict: Any) -> Refusal | None:
    if strict.refuse_summary and (body.get("reasoning") or {}).get("summary"):
        return refusal(
            "summary_unverified",
            openai_error(
                f"Your organization must be verified to generate reasoning summaries. {VERIFY}",
                "reasoning.summary",
                "unsupported_value",
            ),
        )
    return None


def _input(body: Body) -> list[dict[str, Any]]:
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


@rule(
    provider="OpenAI",
    endpoint="responses",
    rule="A reasoning model's function call goes back with the reasoning item before it",
    we_do="a turn's output items go back exactly as they came",
    source="https://github.com/VRSEN/agency-swarm/issues/367",
)
def reasoning_item_required(body: Body, strict: Any) -> Refusal | None:
    if not strict.reasoning:
        return None
    items = _input(body)
    reasoning_ids = {i.get("id") for i in items if i.get("type") == "reasoning"}
    for item in items:
        if item.get("type") == "function_call" and str(item.get("id", "")).startswith("fc_"):
            wanted = "rs_" + item["id"][3:].split("_")[0]
            if wanted not in reasoning_ids:
                return refusal(
                    "reasoning_item_required",
                    openai_error(
                        f"Item '{item['id']}' of type 'function_call' was provided without its "
                        f"required 'reasoning' item: '{wanted}'.",
                        "input",
                    ),
                )
    return None


@rule(
    provider="OpenAI",
    endpoint="responses",
    rule="With `store: false` nothing is kept: a reasoning item sent back without its "
    "encrypted content is not found",
    we_do="`include: [reasoning.encrypted_content]` on every request (not only when an "
    "effort is set)",
    source="https://github.com/can1357/oh-my-pi/issues/41",
)
def store_false_item_not_found(body: Body, strict: Any) -> Refusal | None:
    if body.get("store") is not False:
        return None
    for item in _input(body):
        if item.get("type") == "reasoning" and not item.get("encrypted_content"):
            return refusal(
                "store_false_item_not_found",
                openai_error(
                    f"Item with id '{item.get('id')}' not found. Items are not persisted when "
                    "`store` is set to false. Try again with `store` set to true, or remove "
                    "this item from your input.",
                    "input",
                    status=404,
                ),
            )
    return None


@rule(
    provider="OpenAI",
    endpoint="responses",
    rule="Every `function_call_output` answers a `function_call` with its `call_id`, and "
    "every call is answered",
    we_do="results carry the call's `call_id`; one output per call",
    source="https://github.com/continuedev/continue/issues/10092",
)
def call_id_pairing(body: Body, strict: Any) -> Refusal | None:
    calls: set[str] = set()
    for item in _input(body):
        if item.get("type") == "function_call":
            calls.add(str(item.get("call_id")))
        elif item.get("type") == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in calls:
                message = f"No tool call found for function call output with call_id {call_id}."
                return refusal("call_id_pairing", openai_error(message, "input"))
            calls.discard(call_id)
    if calls:
        message = f"No tool output found for function call {', '.join(sorted(calls))}."
        return refusal("call_id_pairing", openai_error(message, "input"))
    return None


def _strict_ready(schema: Any) -> bool:
    """What strict mode demands of a schema: closed objects, every property required."""
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or []) != set(properties):
            return False
        return all(_strict_ready(p) for p in properties.values())
    if schema.get("type") == "array":
        return _strict_ready(schema.get("items"))
    return True


@rule(
    provider="OpenAI",
    endpoint="responses",
    rule="A function tool without `strict` is strict: its schema must close every object "
    "and require every property",
    we_do="`strict: false` on every function tool (our tools have optional arguments)",
    source="https://github.com/docker/docker-agent/pull/2168",
)
def strict_function_schema(body: Body, strict: Any) -> Refusal | None:
    for index, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            continue
        if tool.get("strict", True) and not _strict_ready(tool.get("parameters")):
            return refusal(
                "strict_function_schema",
                openai_error(
                    f"Invalid schema for function '{tool.get('name')}': In context=(), "
                    "'additionalProperties' is required to be supplied and to be false.",
                    f"tools[{index}].parameters",
                    "invalid_function_parameters",
                ),
            )
    return None


@rule(
    provider="OpenAI",
    endpoint="chat",
    rule="`tool_calls` may not be an empty array",
    we_do="an assistant message carries `tool_calls` only when it made calls",
    source="https://github.com/home-assistant/core/pull/118577",
)
def empty_tool_calls(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor != "openai":
        return None
    for index, message in enumerate(_messages(body)):
        if message.get("tool_calls") == []:
            return refusal(
                "empty_tool_calls",
                openai_error(
                    f"Invalid 'messages[{index}].tool_calls': empty array. Expected an array "
                    "with minimum length 1, but got an empty array instead.",
                    f"messages[{index}].tool_calls",
                    "empty_array",
                ),
            )
    return None


@rule(
    provider="OpenAI",
    endpoint="chat",
    rule="A `tool` message answers a preceding assistant `tool_calls` id, and every call is "
    "answered before the next message (DeepSeek words it its own way)",
    we_do="one tool message per call, with its id, right after the calls",
    source="https://github.com/smarter-sh/smarter/issues/264",
)
def tool_message_pairing(body: Body, strict: Any) -> Refusal | None:
    pending: set[str] = set()
    for index, message in enumerate(_messages(body)):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                if strict.flavor == "deepseek":  # https://github.com/itmisx/deepx-code/issues/94
                    answer = deepseek_error(
                        "Messages with role 'tool' must be a response to a preceding message "
                        "with 'tool_calls'"
                    )
                else:
                    answer = openai_error(
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'.",
                        f"messages.[{index}].role",
                    )
                return refusal("tool_message_pairing", answer)
            pending.discard(call_id)
            continue
        if pending:
            return refusal(
                "tool_message_pairing",
                openai_error(
                    "An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not "
                    f"have response messages: {', '.join(sorted(pending))}",
                    "messages",
                    "invalid_value",
                ),
            )
        if message.get("role") == "assistant":
            pending = {c.get("id") for c in message.get("tool_calls") or []}
    return None


@rule(
    provider="OpenAI",
    endpoint="chat",
    rule="`input_audio` takes only the formats the model lists (`wav`, `mp3`)",
    we_do="wav is sent; an entry whose `audio_formats` lacks it says so before any call",
    source="https://github.com/pydantic/pydantic-ai/pull/1594",
)
def input_audio_format(body: Body, strict: Any) -> Refusal | None:
    for index, message in enumerate(_messages(body)):
        content = message.get("content")
        for part_index, part in enumerate(content if isinstance(content, list) else []):
            if not isinstance(part, dict) or part.get("type") != "input_audio":
                continue
            fmt = (part.get("input_audio") or {}).get("format")
            if fmt not in strict.audio_formats:
                listed = " and ".join(f"'{f}'" for f in strict.audio_formats)
                return refusal(
                    "input_audio_format",
                    openai_error(
                        f"Invalid value: '{fmt}'. Supported values are: {listed}.",
                        f"messages[{index}].content[{part_index}].input_audio.format",
                        "invalid_value",
                    ),
                )
    return None


@rule(
    provider="OpenAI",
    endpoint="transcription",
    rule="`gpt-transcribe` (and the gpt-4o transcribe models) return `json` or `text`, "
    "never `verbose_json`; the language comes as `languages`",
    we_do='`response_format = "json"` in the entry; the language is read from `languages`',
    source="https://github.com/vercel/ai/issues/8214",
)
def transcription_format(body: Body, strict: Any) -> Refusal | None:
    if strict.json_only_transcription and body.get("response_format") == "verbose_json":
        return refusal(
            "transcription_format",
            openai_error(
                f"response_format 'verbose_json' is not compatible with model "
                f"'{body.get('model')}'. Use 'json' or 'text' instead.",
                "response_format",
                "unsupported_value",
            ),
        )
    return None
