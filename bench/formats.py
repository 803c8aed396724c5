"""Benchmark question files in, prediction files out: MMAU, MMAR, MMAU-Pro and the demo format.

- MMAU (``.json``, a list): ``id``, ``audio_id`` (``./test-mini-audios/<id>.wav``), ``question``,
  ``choices``, ``answer`` (the exact choice text), ``task``, ``category``, ``sub-category``,
  ``difficulty``. The official script reads the prediction from ``model_output``.
- MMAR (``.jsonl``): ``id``, ``audio_path`` (one path), ``question``, ``choices``, ``answer``,
  ``modality``, ``category``, ``sub-category``. The official script reads
  ``answer_prediction``; its rubric judge reads the reasoning from ``thinking_prediction``.
- MMAU-Pro (the dataset's ``test.parquet``, or the same rows as ``.json``/``.jsonl``): ``id``,
  ``audio_path`` (a list: several recordings in the multi-audio items), ``question``,
  ``choices`` (empty for open questions), ``answer``, ``category`` (``open``,
  ``instruction following``, or a closed domain: sound, music, speech, multi ...), and for
  instruction following ``task_identifier`` and ``kwargs``. The official script reads
  ``model_output`` from a parquet file.
- Demo (``qa.json`` of the MMAU homepage sample): ``audio``, ``question``, ``choices``,
  ``answer``.

Audio paths are resolved against ``--audio-dir`` (default: the questions file's folder); when
a path is not found there, its file name alone is tried (audio unpacked without the
benchmark's sub-folder). Items whose audio is missing are kept, marked, and never run.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Benchmark = Literal["mmau", "mmar", "mmau-pro", "demo"]
Kind = Literal["choice", "open", "instruction"]
BENCHMARKS: tuple[Benchmark, ...] = ("mmau", "mmar", "mmau-pro", "demo")
GROUP_KEYS = ("task", "modality", "category", "sub-category", "difficulty", "domain_guess")
PREDICTION_KEYS = {
    "mmau": ("model_output",),
    "demo": ("model_output",),
    "mmau-pro": ("model_output",),
    "mmar": ("answer_prediction", "thinking_prediction"),
}
PRO_OPEN = "open"
PRO_INSTRUCTION = "instruction following"


class FormatError(ValueError):
    """A questions file that cannot be read, with what is wrong and where."""


@dataclass
class Item:
    """One benchmark question, ready to be asked."""

    id: str
    benchmark: Benchmark
    question: str
    choices: list[str]
    answer: str
    audio: list[Path]
    kind: Kind = "choice"
    groups: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # audio paths not found

    @property
    def runnable(self) -> bool:
        return bool(self.audio) and not self.missing

    def labels(self) -> dict[str, Any]:
        """What a report needs of the item without its file: the answer and the groups."""
        out: dict[str, Any] = {"answer": self.answer, "kind": self.kind, **self.groups}
        if self.kind == "instruction":
            out["task_identifier"] = self.raw.get("task_identifier")
        if self.raw.get("expect_guess"):  # the dev sets' items no recording can decide
            out["expect_guess"] = True
        return out


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        try:
            import pandas as pd

            frame = pd.read_parquet(path)
        except ImportError as exc:
            raise FormatError(
                f"{path.name}: reading parquet needs pyarrow (pip install -r "
                "requirements-bench.txt)."
            ) from exc
        return [_plain(r) for r in frame.to_dict(orient="records")]
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise FormatError(f"{path.name}, line {number}: not JSON ({exc.msg}).") from exc
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path.name}: not JSON ({exc.msg}, line {exc.lineno}).") from exc
    if not isinstance(data, list):
        raise FormatError(f"{path.name}: expected a JSON list of questions.")
    return data


def _plain(value: Any) -> Any:
    """numpy arrays and scalars from a parquet row as plain lists and numbers."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return _plain(value.tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN: a missing value
        return None
    return value


def detect(rows: list[dict[str, Any]], path: Path) -> Benchmark:
    if path.suffix == ".parquet":
        return "mmau-pro"
    first = rows[0] if rows else {}
    # MMAU-Pro's categories are looked at only in rows keyed as MMAU-Pro's (audio_path): the
    # dev sets (MMAU keys, audio_id) have an "open" category of their own.
    if (
        isinstance(first.get("audio_path"), list)
        or "task_identifier" in first
        or (
            "audio_id" not in first
            and any(r.get("category") in (PRO_OPEN, PRO_INSTRUCTION) for r in rows)
        )
    ):
        return "mmau-pro"
    if "audio_path" in first:
        return "mmar"
    if "audio_id" in first:
        return "mmau"
    if "audio" in first:
        return "demo"
    raise FormatError(
        f"{path.name}: not MMAU (audio_id), MMAR (audio_path), MMAU-Pro (audio_path list) or "
        "the demo format (audio); pass --format."
    )


def _audio_values(row: dict[str, Any], benchmark: Benchmark) -> list[str]:
    key = {"mmau": "audio_id", "mmar": "audio_path", "mmau-pro": "audio_path", "demo": "audio"}
    value = row.get(key[benchmark])
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def resolve_audio(value: str, audio_dir: Path) -> Path | None:
    """The file a benchmark's audio path names under ``audio_dir``, or None."""
    candidate = Path(value)
    options = [candidate] if candidate.is_absolute() else []
    options += [audio_dir / value, audio_dir / candidate.name]
    return next((p.resolve() for p in options if p.is_file()), None)


def _kind(row: dict[str, Any], benchmark: Benchmark) -> Kind:
    if benchmark != "mmau-pro":
        return "choice"
    category = row.get("category")
    if category == PRO_OPEN:
        return "open"
    if category == PRO_INSTRUCTION:
        return "instruction"
    return "choice"


def load_items(
    path: Path, audio_dir: Path | None = None, benchmark: Benchmark | None = None
) -> tuple[Benchmark, list[Item]]:
    """Every question of a benchmark file, with its audio resolved (or marked missing)."""
    if not path.is_file():
        raise FormatError(f"No questions file {path}.")
    rows = _rows(path)
    if not rows:
        raise FormatError(f"{path.name} has no questions.")
    benchmark = benchmark or detect(rows, path)
    root = audio_dir or path.parent
    items = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or "question" not in row:
            raise FormatError(f"{path.name}, question {index + 1}: no 'question' field.")
        item_id = str(row.get("id") or index)
        if item_id in seen:  # ids must tell items apart: fall back to the position
            item_id = f"{item_id}#{index}"
        seen.add(item_id)
        values = _audio_values(row, benchmark)
        found = [(v, resolve_audio(v, root)) for v in values]
        choices = row.get("choices") or []
        items.append(
            Item(
                id=item_id,
                benchmark=benchmark,
                question=str(row["question"]),
                choices=[str(c) for c in choices],
                answer=str(row.get("answer") or ""),
                audio=[p for _, p in found if p is not None],
                kind=_kind(row, benchmark),
                groups={k: str(row[k]) for k in GROUP_KEYS if row.get(k) not in (None, "")},
                raw=row,
                missing=[v for v, p in found if p is None] if values else ["(none given)"],
            )
        )
    return benchmark, items


def shuffled_choices(item: Item, seed: int) -> list[str]:
    """The item's choices in an order fixed by the seed and the item (same for every run)."""
    order = list(item.choices)
    random.Random(f"{seed}:{item.id}").shuffle(order)
    return order


def prediction_fields(benchmark: Benchmark, prediction: str, reasoning: str) -> dict[str, str]:
    """The keys the benchmark's official script reads, with this item's prediction."""
    if benchmark == "mmar":
        return {"answer_prediction": prediction, "thinking_prediction": reasoning}
    return {"model_output": prediction}


def write_predictions(
    path: Path,
    benchmark: Benchmark,
    items: list[Item],
    predictions: dict[str, tuple[str, str]],
    source: Path,
) -> Path:
    """The benchmark file with the prediction keys added to every answered item (an item
    without them is one the official MMAU/MMAR scripts skip), in the format of ``source``:
    a parquet file stays parquet (MMAU-Pro's script reads only that)."""
    rows = []
    for item in items:
        row = dict(item.raw)
        if item.id in predictions:
            prediction, reasoning = predictions[item.id]
            row.update(prediction_fields(benchmark, prediction, reasoning))
        rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    if source.suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(rows).to_parquet(path)
    elif source.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    return path
