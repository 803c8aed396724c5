"""MMAU-Pro's instruction-following checks (the "instruction following" category).

Each item names a ``task_identifier`` and its ``kwargs``; the answer passes when the response
obeys the instruction, by the rules of MMAU-Pro's ``evaluate_mmau_pro_comprehensive.py``
(sonalkum/MMAUPro): words are split on whitespace, paragraphs on ``***``, bullets are lines
starting with ``*``, highlights ``*text*``, placeholders ``[text]``, a title ``<<text>>``,
phrases compared on letters and spaces only, lower-cased. An unknown identifier fails, as
there. Sentences are counted with NLTK's Punkt tokenizer like the official script when
``nltk`` and its ``punkt_tab`` data are installed; otherwise with a plain splitter on ., ! and
? followed by a space (the report says which: ``SENTENCES_EXACT``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any


def _nltk_sentences() -> Callable[[str], list[str]] | None:
    try:
        import nltk

        nltk.data.find("tokenizers/punkt_tab/english/")
        return nltk.tokenize.sent_tokenize
    except Exception:  # noqa: BLE001 - not installed, or its data is missing
        return None


_SENT_TOKENIZE = _nltk_sentences()
SENTENCES_EXACT = _SENT_TOKENIZE is not None
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> int:
    if _SENT_TOKENIZE is not None:
        return len(_SENT_TOKENIZE(text))
    return len([s for s in _SENTENCE_END.split(text.strip()) if s.strip()])


def words(text: str) -> int:
    return len(text.split())


def paragraphs(text: str) -> int:
    return len([p for p in text.split("***") if p.strip()])


def bullets(text: str) -> int:
    return len(re.findall(r"(?:^|\n)\s*\*\s+", text))


def highlights(text: str) -> int:
    return len(re.findall(r"\*([^*]+)\*", text))


def placeholders(text: str) -> int:
    return len(re.findall(r"\[[^\]]+\]", text))


def capital_words(text: str) -> int:
    return sum(1 for word in text.split() if word.isupper())


def keyword_count(text: str, keyword: str) -> int:
    return len(re.findall(r"\b" + re.escape(keyword.lower()) + r"\b", text.lower()))


def _letters(text: str, keep_spaces: bool) -> str:
    return re.sub(r"[^a-zA-Z ]" if keep_spaces else r"[^a-zA-Z]", "", text).lower()


def _sections(text: str, count: int, splitter: str) -> bool:
    parts = re.split(rf"\s*{re.escape(splitter)}\s*", text.strip())
    return len([p for p in parts if p.strip()]) == count


def _kwargs(raw: Any) -> dict[str, Any]:
    """The item's kwargs as a dict (a JSON string in some exports); None values dropped so
    the rules' defaults apply."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            raw = {}
    return {k: v for k, v in (raw or {}).items() if v is not None}


def _between(value: int, kw: dict[str, Any]) -> bool:
    return kw.get("N1", 0) <= value <= kw.get("N2", 999)


def _list(kw: dict[str, Any], key: str) -> list[str]:
    return str(kw.get(key, "")).split(", ")


RULES: dict[str, Callable[[str, dict[str, Any], str], bool]] = {
    "Include Keywords": lambda r, kw, q: all(k.lower() in r.lower() for k in _list(kw, "keywords")),
    "Keyword Frequency": lambda r, kw, q: keyword_count(r, kw.get("keyword", "")) == kw.get("N", 0),
    "Forbidden Words": lambda r, kw, q: (
        not any(w.lower() in r.lower() for w in _list(kw, "forbidden_words") if w)
    ),
    "Number Paragraphs": lambda r, kw, q: paragraphs(r) == kw.get("N", 0),
    "Number Words (at least)": lambda r, kw, q: words(r) >= kw.get("N", 0),
    "Number Words (at most)": lambda r, kw, q: words(r) <= kw.get("N", 0),
    "Number Words (range)": lambda r, kw, q: _between(words(r), kw),
    "Number Sentences (at least)": lambda r, kw, q: sentences(r) >= kw.get("N", 0),
    "Number Sentences (at most)": lambda r, kw, q: sentences(r) <= kw.get("N", 0),
    "Number Sentences (range)": lambda r, kw, q: _between(sentences(r), kw),
    "Postscript": lambda r, kw, q: (
        _letters(kw.get("postscript_marker", ""), False) in _letters(r, False)
    ),
    "Number Placeholder": lambda r, kw, q: placeholders(r) >= kw.get("N", 0),
    "Number Bullets": lambda r, kw, q: bullets(r) == kw.get("N", 0),
    "Title": lambda r, kw, q: bool(re.search(r"<<[^>]+>>", r)),
    "Minimum Number Highlighted Section": lambda r, kw, q: highlights(r) >= kw.get("N", 0),
    "Multiple Sections": lambda r, kw, q: _sections(
        r, kw.get("N", 0), kw.get("section_splitter", "")
    ),
    "Repeat Prompt": lambda r, kw, q: r.strip().lower().startswith(q.strip().lower()),
    "Two Responses": lambda r, kw, q: (
        len(parts := r.split("******")) == 2
        and parts[0].lower().strip() != parts[1].lower().strip()
    ),
    "All Uppercase": lambda r, kw, q: r.isupper(),
    "All Lowercase": lambda r, kw, q: r.islower(),
    "All-capital Words (at least)": lambda r, kw, q: capital_words(r) >= kw.get("N", 0),
    "All-capital Words (at most)": lambda r, kw, q: capital_words(r) <= kw.get("N", 0),
    "All-capital Words (range)": lambda r, kw, q: _between(capital_words(r), kw),
    "Start Checker": lambda r, kw, q: _letters(r, True).startswith(
        _letters(kw.get("start_phrase", ""), True)
    ),
    "End Checker": lambda r, kw, q: _letters(r, True).endswith(
        _letters(kw.get("end_phrase", ""), True)
    ),
    "Quotation": lambda r, kw, q: r.strip().startswith('"') and r.strip().endswith('"'),
    "No Commas": lambda r, kw, q: "," not in r,
}


def follows(response: str, task_identifier: str | None, kwargs: Any, question: str) -> bool:
    """Whether ``response`` obeys the item's instruction (False for an unknown one)."""
    rule = RULES.get(task_identifier or "")
    return bool(rule and rule(str(response), _kwargs(kwargs), question or ""))
