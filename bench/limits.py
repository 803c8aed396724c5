"""How fast bad requests are refused, and whether a long decode holds up other requests.

    python -m bench.limits

Starts the app (API only, no models) on a loopback port and prints, for each attack of
issue 7, how long the server takes to answer it; then the /api/health latency while a
10-minute wav decodes in another request. Loopback only; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import io
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import soundfile as sf

from app import create_app
from backend.host.settings import Settings
from tests.servers import serve
from tests.test_api import scripted_registry


def wav(samples: np.ndarray, rate: int) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, samples, rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def timed(label: str, send) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    status, detail = send()
    ms = (time.perf_counter() - started) * 1000
    print(f"{label:<42} {status}  {ms:9.1f} ms  {detail[:70]}")


def declared_gigabyte(base: str) -> tuple[int, str]:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST /api/audio HTTP/1.1\r\nHost: {host}\r\n"
            "Content-Type: multipart/form-data; boundary=x\r\n"
            f"Content-Length: {1 << 30}\r\n\r\n--x\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):  # the server closes after its 413
            answer += chunk
    text = answer.decode(errors="replace")
    return int(text.split(" ")[1]), text.rsplit("\r\n\r\n", 1)[-1]


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        prog="python -m bench.limits", description=__doc__.split("\n\n")[0]
    ).parse_args(argv)  # no options: refuses any it is given
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), warm_up=False, max_audio_minutes=60)
        app = create_app(settings, registry=scripted_registry()[0], ui=False)
        with serve(app) as base, httpx.Client(base_url=base, timeout=120) as http:
            conv = http.post("/api/conversations", json={}).json()["id"]

            def upload(name: str, data: bytes):  # type: ignore[no-untyped-def]
                def send() -> tuple[int, str]:
                    r = http.post("/api/audio", files={"file": (name, data)})
                    return r.status_code, str(r.json().get("detail", ""))

                return send

            sdp = (
                b"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                b"m=audio 5004 RTP/AVP 0\r\n"
            )
            concat = b"ffconcat version 1.0\nfile 'tests/fixtures/dog_bark_esc50.wav'\n"
            print(f"{'request':<42} status   time      detail")
            timed("ffconcat naming a server file", upload("list.wav", concat))
            timed("SDP on 127.0.0.1 (FFmpeg waited 20 s)", upload("s.sdp", sdp))
            timed(
                "2-hour wav, 8 kHz (header only read)",
                upload("long.wav", wav(np.zeros(2 * 3600 * 8000, np.int16), 8000)),
            )  # noqa: E501
            timed("Content-Length 1 GB", lambda: declared_gigabyte(base))

            def question(text: str):  # type: ignore[no-untyped-def]
                def send() -> tuple[int, str]:
                    r = http.post(f"/api/conversations/{conv}/ask", json={"question": text})
                    return r.status_code, str(r.json().get("detail", ""))

                return send

            timed("10 MB question", question("x" * 10_000_000))
            timed("5,000-character question", question("x" * 5000))

            # Health latency while a 10-minute 44.1 kHz wav decodes.
            t = np.arange(10 * 60 * 44_100, dtype=np.float32) / 44_100
            long = wav((0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 44_100)
            done = threading.Event()

            def post() -> None:
                httpx.post(f"{base}/api/audio", files={"file": ("ten.wav", long)}, timeout=300)
                done.set()

            worker = threading.Thread(target=post)
            started = time.perf_counter()
            worker.start()
            latencies: list[float] = []
            while not done.is_set():
                t0 = time.perf_counter()
                http.get("/api/health")
                latencies.append(time.perf_counter() - t0)
                time.sleep(0.01)
            worker.join()
            upload_s = time.perf_counter() - started
            ms = sorted(x * 1000 for x in latencies)
            print(
                f"\n10-minute wav upload took {upload_s:.2f} s; /api/health meanwhile: "
                f"{len(ms)} answers, median {statistics.median(ms):.1f} ms, "
                f"max {ms[-1]:.1f} ms"
            )


if __name__ == "__main__":
    main()
