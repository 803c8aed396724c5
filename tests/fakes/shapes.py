"""Request bodies checked against the request types the official SDKs ship.

The fakes run every body they receive through these checks before any rule: an unknown
key, a missing required key, a wrong item type or an enum value the SDK's type does not
list is a 400, as the real APIs answer ("Unknown parameter: 'input[2].status'.").

- ``openai``: the ``TypedDict`` request types (``CompletionCreateParams...``,
  ``ResponseCreateParams...``, ``TranscriptionCreateParams...``), walked here field by
  field: the SDK does not check them at run time, so a wrong key goes out on the wire
  unnoticed. A transcription is a multipart form: its fields are read back into one body
  first (``a[]`` repeated is a list, ``a[b]`` an object, as the SDK writes them) and its
  string values taken as the type asks (``"0.2"`` for a number, ``"false"`` for a boolean).
- ``google-genai``: its pydantic models forbid unknown fields; the wire JSON (camelCase,
  base64 bytes) is validated with ``model_validate_json``: a generateContent body, and the
  metadata that starts a Files API upload (``{"file": File}``).

Provider extensions the SDK types do not know (DeepSeek's ``reasoning_content`` on an
assistant message, OpenRouter's ``reasoning_details``) are allowed per fake model, by the
name of the ``TypedDict`` they extend.
"""

from __future__ import annotations

import json
import re
import typing
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pydantic
import typing_extensions

Extras = Mapping[str, frozenset[str]]  # TypedDict name -> keys a provider adds to it


def typed_errors(
    value: Any, tp: Any, path: str = "body", extras: Extras | None = None
) -> list[str]:
    """Where ``value`` does not fit the SDK type ``tp`` (empty: it fits)."""
    extras = extras or {}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Annotated, typing_extensions.Annotated):
        return typed_errors(value, args[0], path, extras)
    if origin in _REQUIRED or origin in _NOT_REQUIRED:
        return typed_errors(value, args[0], path, extras)
    if tp in (Any, object) or isinstance(tp, typing.TypeVar):
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return _union_errors(value, args, path, extras)
    if origin is typing.Literal or origin is typing_extensions.Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {list(args)}"]
    if typing_extensions.is_typeddict(tp):
        return _typed_dict_errors(value, tp, path, extras)
    if origin in (list, Iterable, Sequence, typing.Iterable, typing.Sequence) or (
        isinstance(origin, type) and origin.__name__ == "SequenceNotStr"
    ):
        if not isinstance(value, list):
            return [f"{path}: expected an array"]
        return [
            e for i, v in enumerate(value) for e in typed_errors(v, args[0], f"{path}[{i}]", extras)
        ]
    if origin in (dict, Mapping, typing.Dict):  # noqa: UP006 - as the SDK spells it
        return [] if isinstance(value, dict) else [f"{path}: expected an object"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: expected a string"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean"]
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected an integer"]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected a number"]
    if getattr(tp, "__name__", "") == "SequenceNotStr":
        return [] if isinstance(value, list) else [f"{path}: expected an array"]
    return []  # a type this walker does not model (files, ...): not checked


def _typed_dict_errors(value: Any, tp: Any, path: str, extras: Extras) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({tp.__name__})"]
    hints = typing_extensions.get_type_hints(tp, include_extras=True)
    allowed = set(hints) | extras.get(tp.__name__, frozenset())
    errors = [f"{path}: unknown parameter {key!r}" for key in value if key not in allowed]
    errors += [
        f"{path}: missing required parameter {key!r}"
        for key in _required(tp, hints)
        if key not in value
    ]
    for key, item in value.items():
        if key in hints:
            errors += typed_errors(item, hints[key], f"{path}.{key}", extras)
    return errors


_REQUIRED = {typing_extensions.Required, typing.Required}
_NOT_REQUIRED = {typing_extensions.NotRequired, typing.NotRequired}


def _required(tp: Any, hints: dict[str, Any]) -> set[str]:
    """The keys a TypedDict requires. The SDK's modules use postponed annotations, so
    ``__required_keys__`` misses ``Required[...]``: read it from the resolved hints."""
    required = set(getattr(tp, "__required_keys__", ()))
    for key, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin in _REQUIRED:
            required.add(key)
        elif origin in _NOT_REQUIRED:
            required.discard(key)
    return required


def _kind(value: Any) -> type:
    return dict if isinstance(value, dict) else list if isinstance(value, list) else type(value)


def _union_errors(value: Any, options: tuple[Any, ...], path: str, extras: Extras) -> list[str]:
    found = [typed_errors(value, option, path, extras) for option in options]
    if any(not errors for errors in found):
        return []
    # report the branch that fits best: of the value's own kind (an object, a list ...),
    # then the one with the fewest complaints (usually the one whose "type" matched)
    same_kind = [
        errors
        for option, errors in zip(options, found, strict=True)
        if _shape(option) in (None, _kind(value))
    ]
    return min(same_kind or found, key=len)


def _shape(tp: Any) -> type | None:
    """The JSON kind a type stands for (None: any or unknown)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Annotated, typing_extensions.Annotated, *_REQUIRED, *_NOT_REQUIRED):
        return _shape(typing.get_args(tp)[0])
    if typing_extensions.is_typeddict(tp) or origin in (dict, Mapping):
        return dict
    if origin in (list, Iterable, Sequence) or getattr(origin, "__name__", "") == "SequenceNotStr":
        return list
    if tp in (str, int, float, bool):
        return tp
    return None


def openai_errors(endpoint: str, body: dict[str, Any], extras: Extras | None = None) -> list[str]:
    """``body`` against the ``openai`` SDK's request type for ``endpoint``."""
    streaming = bool(body.get("stream"))
    if endpoint == "chat":
        from openai.types.chat import completion_create_params as params

        tp = (
            params.CompletionCreateParamsStreaming
            if streaming
            else params.CompletionCreateParamsNonStreaming
        )
    elif endpoint == "responses":
        from openai.types.responses import response_create_params as params  # type: ignore[no-redef]

        tp = (
            params.ResponseCreateParamsStreaming
            if streaming
            else params.ResponseCreateParamsNonStreaming
        )
    else:
        raise ValueError(endpoint)
    return typed_errors(body, tp, "body", extras)


# -- multipart forms (audio/transcriptions) --------------------------------------------------


def form_body(items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Form fields as the ``openai`` SDK writes them (``array_format="brackets"``) back into
    one body: ``timestamp_granularities[]`` repeated is a list, ``chunking_strategy[type]``
    a key of an object."""
    body: dict[str, Any] = {}
    for key, value in items:
        name, _, rest = key.partition("[")
        path = [name, *re.findall(r"\[([^\]]*)\]", "[" + rest)] if rest else [name]
        _put(body, path, value)
    return body


def _put(target: Any, path: list[str], value: Any) -> None:
    head, rest = path[0], path[1:]
    if not rest:
        if isinstance(target, list):
            target.append(value)
        else:
            target[head] = value
        return
    empty: Any = [] if rest[0] == "" else {}
    if isinstance(target, list):
        target.append(empty)
        child = empty
    else:
        child = target.get(head)
        if not isinstance(child, type(empty)):  # "a" and "a[b]" both sent: the latter wins
            child = target[head] = empty
    _put(child, rest, value)


def _form_text(value: Any) -> str:
    """How the SDK writes a scalar into a form (``True`` is ``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def from_form(value: Any, tp: Any) -> Any:
    """``value`` (strings, lists and objects of strings) as the type ``tp`` reads it: a
    string that spells a number, boolean or enum value the type wants becomes that value;
    anything else stays as it came (and the walk above reports it)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Annotated, typing_extensions.Annotated, *_REQUIRED, *_NOT_REQUIRED):
        return from_form(value, args[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for option in args:
            converted = from_form(value, option)
            if not typed_errors(converted, option):
                return converted
        return value
    if origin is typing.Literal or origin is typing_extensions.Literal:
        for arg in args:
            if isinstance(value, str) and value == _form_text(arg):
                return arg
        return value
    if typing_extensions.is_typeddict(tp) and isinstance(value, dict):
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        return {k: from_form(v, hints[k]) if k in hints else v for k, v in value.items()}
    if _shape(tp) is list and isinstance(value, list) and args:
        return [from_form(v, args[0]) for v in value]
    if not isinstance(value, str):
        return value
    if tp is bool and value in ("true", "false"):
        return value == "true"
    if tp in (int, float):
        try:
            number = float(value)
        except ValueError:
            return value
        if tp is float:
            return number
        return int(number) if number.is_integer() and "." not in value else value
    return value


def transcription_errors(
    items: Iterable[tuple[str, Any]], extras: Extras | None = None
) -> list[str]:
    """A multipart ``audio/transcriptions`` request against the ``openai`` SDK's
    ``TranscriptionCreateParams``. The ``file`` part is only required, not read."""
    from openai.types.audio import transcription_create_params as params

    body = form_body(items)
    streaming = body.get("stream") == "true"
    tp = (
        params.TranscriptionCreateParamsStreaming
        if streaming
        else params.TranscriptionCreateParamsNonStreaming
    )
    return typed_errors(from_form(body, tp), tp, "body", extras)


# -- google-genai -------------------------------------------------------------------------------


_GEMINI_FIELDS = {
    "contents": "Content",
    "systemInstruction": "Content",
    "tools": "Tool",
    "toolConfig": "ToolConfig",
    "generationConfig": "GenerationConfig",
    "safetySettings": "SafetySetting",
    "cachedContent": None,
}


def gemini_errors(body: dict[str, Any]) -> list[str]:
    """A generateContent body against ``google-genai``'s models (unknown fields, wrong
    enum values and wrong shapes are errors; bytes arrive as base64)."""
    from google.genai import types

    errors = []
    for key, value in body.items():
        if key not in _GEMINI_FIELDS:
            errors.append(f'Unknown name "{key}": Cannot find field.')
            continue
        model = _GEMINI_FIELDS[key]
        if model is None:
            continue
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            # google-genai accepts an enum value it does not know with a warning (for newer
            # API versions); the API itself refuses it, so here it is an error
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                try:
                    getattr(types, model).model_validate_json(json.dumps(item))
                except pydantic.ValidationError as exc:
                    for problem in exc.errors():
                        where = ".".join(str(p) for p in problem["loc"])
                        errors.append(f"{key}[{index}].{where}: {problem['msg']}")
            errors += [
                f"{key}[{index}]: {w.message}" for w in seen if "is not a valid" in str(w.message)
            ]
    return errors


def gemini_file_errors(body: Any) -> list[str]:
    """The body that starts a Files API upload (``media.upload``: ``{"file": File}``, the
    metadata the SDK sends before the bytes) against ``google-genai``'s ``File`` model."""
    from google.genai import types

    if not isinstance(body, dict):
        return ["Invalid JSON payload received. Expected an object."]
    errors = [f'Unknown name "{key}": Cannot find field.' for key in body if key != "file"]
    with warnings.catch_warnings(record=True) as seen:  # an unknown enum value: see above
        warnings.simplefilter("always")
        try:
            types.File.model_validate_json(json.dumps(body.get("file", {})))
        except pydantic.ValidationError as exc:
            for problem in exc.errors():
                where = ".".join(str(p) for p in problem["loc"])
                errors.append(f"file.{where}: {problem['msg']}".replace("file.:", "file:"))
    errors += [f"file: {w.message}" for w in seen if "is not a valid" in str(w.message)]
    return errors
