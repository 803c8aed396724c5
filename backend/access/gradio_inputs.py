"""Which values of a Gradio event's data name files, read from the Blocks the way
``/gradio_api/info`` and ``/config`` describe them (not from handler names).

An event names its function by ``fn_index`` (the page: ``/gradio_api/queue/join``) or by its
API name (``/gradio_api/call/<name>``, ``/run/<name>``, ``/api/<name>``; ``/call/v2/<name>``
names its values by parameter). A *file input* is an input whose component's data model
holds Gradio's ``FileData`` (``gr.UploadButton``, ``gr.Audio``, ``gr.File``, a ``Chatbot``'s
files...). ``file_refs`` gives every file reference of a request body:

- in a file input, every dict carrying a ``path`` or ``url`` (with or without Gradio's
  ``meta``: without it Gradio hands the path to the handler as it is), and the value itself
  when it is a bare string (a path);
- anywhere else in the body, every dict marked ``{"meta": {"_type": "gradio.FileData"}}``:
  Gradio copies such a file into its cache before any handler runs.

A function it cannot find (rendered later with ``gr.render``, or a wrong name) gets the
strict reading for every value but bare strings: Gradio refuses the event anyway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

FILE_DATA = "gradio.FileData"
NO_STRINGS = -1  # (a position) every value read strictly, bare strings let through


def is_file_component(component: Any) -> bool:
    """Whether a component's value holds files (its API schema names Gradio's FileData)."""
    try:
        return FILE_DATA in json.dumps(component.api_info())
    except Exception:  # a component without a schema takes no file
        return False


@dataclass
class FnFiles:
    """One event function: the positions of its file inputs in the page's data (all inputs)
    and in the API's (inputs without ``skip_api``), and its file parameters by name (v2)."""

    inputs: int
    positions: set[int]
    api_inputs: int
    api_positions: set[int]
    names: set[str] = field(default_factory=set)


@dataclass
class BlocksFiles:
    """The file inputs of every event function of one Blocks."""

    by_index: dict[int, FnFiles]
    by_name: dict[str, int]

    @classmethod
    def of(cls, blocks: Any) -> BlocksFiles:
        by_index: dict[int, FnFiles] = {}
        by_name: dict[str, int] = {}
        for fn_id, fn in blocks.fns.items():
            files = [is_file_component(c) for c in fn.inputs]
            api = [f for c, f in zip(fn.inputs, files, strict=True) if not c.skip_api]
            by_index[fn_id] = FnFiles(
                len(files),
                {i for i, f in enumerate(files) if f},
                len(api),
                {i for i, f in enumerate(api) if f},
            )
            if fn.api_name:
                by_name[str(fn.api_name)] = fn_id
        try:
            endpoints = blocks.get_api_info(all_endpoints=True)["named_endpoints"]
        except Exception:  # (no API info: v2 calls get the strict reading)
            endpoints = {}
        for name, fn_id in by_name.items():
            params = endpoints.get("/" + name, {}).get("parameters", [])
            by_index[fn_id].names = {
                str(p.get("parameter_name")) for p in params if FILE_DATA in json.dumps(p)
            }
        return cls(by_index, by_name)

    def find(self, fn_index: Any, api_name: str | None) -> FnFiles | None:
        if isinstance(fn_index, int) and not isinstance(fn_index, bool):
            return self.by_index.get(fn_index)
        if api_name is not None and api_name in self.by_name:
            return self.by_index[self.by_name[api_name]]
        return None


def file_refs(body: Any, fn: FnFiles | None, *, named: bool = False) -> Iterator[Any]:
    """Every file reference in an event's body (see the module doc): dicts, or bare strings
    in a file input. ``named``: the body is ``/call/v2``'s, its values by parameter name."""
    if not isinstance(body, dict):
        return
    if named:
        for name, value in body.items():
            if fn is None or name in fn.names:
                yield from _strict(value, top=fn is not None)
            else:
                yield from _marked(value)
        return
    data = body.get("data")
    if isinstance(data, list):
        if body.get("batched"):  # each value a list of samples
            positions = _positions(fn, len(data))
            for i, samples in enumerate(data):
                for value in samples if isinstance(samples, list) else [samples]:
                    yield from _value(value, positions, i)
        else:
            positions = _positions(fn, len(data))
            for i, value in enumerate(data):
                yield from _value(value, positions, i)
    for key, value in body.items():
        if key != "data":
            yield from _marked(value)


def _positions(fn: FnFiles | None, count: int) -> set[int]:
    if fn is None:
        return {NO_STRINGS}
    if count not in (fn.inputs, fn.api_inputs):  # Gradio refuses it; read it strictly
        return fn.positions | fn.api_positions
    positions = set()
    if count == fn.inputs:  # the page sends every input
        positions |= fn.positions
    if count == fn.api_inputs:  # a program may leave out those the API skips
        positions |= fn.api_positions
    return positions


def _value(value: Any, positions: set[int], i: int) -> Iterator[Any]:
    if i in positions:
        yield from _strict(value, top=True)
    elif NO_STRINGS in positions:
        yield from _strict(value, top=False)
    else:
        yield from _marked(value)


def _strict(value: Any, *, top: bool) -> Iterator[Any]:
    """A file input's value: every dict with a path or URL; a bare string at its top."""
    if isinstance(value, str):
        if top:
            yield value
    elif isinstance(value, dict):
        if "path" in value or "url" in value or _is_marked(value):
            yield value
        else:
            for item in value.values():
                yield from _strict(item, top=False)
    elif isinstance(value, list):
        for item in value:
            yield from _strict(item, top=top)


def _marked(value: Any) -> Iterator[dict[str, Any]]:
    """Dicts marked as Gradio's FileData, anywhere in ``value``."""
    if isinstance(value, dict):
        if _is_marked(value):
            yield value
        else:
            for item in value.values():
                yield from _marked(item)
    elif isinstance(value, list):
        for item in value:
            yield from _marked(item)


def _is_marked(value: dict[str, Any]) -> bool:
    meta = value.get("meta")
    return isinstance(meta, dict) and meta.get("_type") == FILE_DATA
