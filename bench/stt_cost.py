"""Where speech-to-text's time goes on short clips: per speech item of a dev set, the time of
the transcript, of the answer options' scores and of the encoder within them.

    python -m bench.stt_cost [--file data/devsets-1/devsets.json] [--n 30]
        [--short-context] [--no-cache] [--fallback]

Each speech item's clip (``task == "speech"``; the first ``--n``) is transcribed as the
``transcribe`` tool does (``whisper_asr.transcribe``, beam 5), then its choices are scored
(``whisper_options.option_scores``), after a warm-up clip. Printed per clip: its length, the
transcript's time, how many encoder runs it took and their time (the rest is decoding, the
temperature fallback included), the options' time and encoder runs (0 when the transcript's
encoder output was reused), and the transcript. ``--short-context`` sets
``AUDIO_AGENT_WHISPER_SHORT_CONTEXT=1`` (features padded to the clip plus a margin, not
30 s); ``--no-cache`` encodes the clip again for its options (as before the encoder's output
was kept); ``--fallback`` gives short clips faster-whisper's temperature fallback again (now
they are decoded at temperature 0 only unless that loops). ``--no-cache --fallback`` is the
cost before both. Times are wall seconds on one thread per call: state the machine's load
beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, default=Path("data/devsets-1/devsets.json"))
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--short-context", action="store_true")
    parser.add_argument("--no-cache", action="store_true", help="encode again for the options")
    parser.add_argument(
        "--fallback", action="store_true", help="the temperature fallback on short clips too"
    )
    args = parser.parse_args()
    if not args.file.is_file():
        print(f"skipped: {args.file} is missing (python -m bench.devsets --seed 1 --out ...)")
        return
    if args.short_context:
        os.environ["AUDIO_AGENT_WHISPER_SHORT_CONTEXT"] = "1"
    from agent.audio import load_samples
    from agent.local_models import whisper_asr, whisper_options

    if args.no_cache:
        whisper_asr.ENCODER_CACHE_SIZE = 0
    if args.fallback:
        whisper_asr.NO_FALLBACK_BELOW_S = 0.0
    items = [i for i in json.loads(args.file.read_text()) if i.get("task") == "speech"]
    items = items[: args.n + 1]
    stats = whisper_asr.ENCODER_STATS
    rows = []
    for index, item in enumerate(items):
        samples = load_samples(args.file.parent / item["audio_id"])
        whisper_asr.clear_encoder_cache()
        stats.reset()
        begun = time.perf_counter()
        transcript = whisper_asr.transcribe(samples)
        t_stt = time.perf_counter() - begun
        enc_runs, enc_s = stats.runs, stats.seconds
        stats.reset()
        begun = time.perf_counter()
        choices = [str(c) for c in item.get("choices") or []]
        if choices and transcript.segments:
            whisper_options.option_scores(samples, choices)
        t_opt = time.perf_counter() - begun
        if index == 0:
            continue  # warm-up
        rows.append((len(samples) / 16_000, t_stt, enc_runs, enc_s, t_opt, stats.runs))
        print(
            f"{item['id']:8} {item['category']:12} {rows[-1][0]:5.1f} s  transcribe "
            f"{t_stt:5.2f} s (encoder x{enc_runs} {enc_s:4.2f} s)  options {t_opt:5.2f} s "
            f"(encoder x{stats.runs})  {transcript.text[:50]!r}"
        )
    if not rows:
        return
    audio = sum(r[0] for r in rows)
    print(
        f"{len(rows)} clips, {audio:.1f} s of audio: transcribe {sum(r[1] for r in rows):.1f} s "
        f"(median {statistics.median(r[1] for r in rows):.2f}; encoder "
        f"{sum(r[3] for r in rows):.1f} s in {sum(r[2] for r in rows)} runs), options "
        f"{sum(r[4] for r in rows):.1f} s (median {statistics.median(r[4] for r in rows):.2f}; "
        f"{sum(r[5] for r in rows)} encoder runs); "
        f"x{(sum(r[1] for r in rows) + sum(r[4] for r in rows)) / audio:.3f} real time"
    )
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
