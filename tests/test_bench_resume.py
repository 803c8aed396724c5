"""A benchmark killed mid-way (SIGKILL) and started again: nothing that ended runs twice, and
the totals are those of a run that was never killed (run in this process). Real processes,
the real offline planner and local model, the process-pool executor."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import soundfile as sf

from tests.leftovers import descendants
from tests.servers import start_deadline_s

pytestmark = pytest.mark.models
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
SOUNDS = ["dog_bark_esc50.wav", "rooster_esc50_cut.wav"]
# Five questions (two kinds of tool), three runs of them: the kill comes after two are
# scored, so the restart has both ended runs to skip and runs left to do.
DIGITS = ["digit_1_george_1.wav", "digit_3_jackson_4.wav", "digit_6_theo_4.wav"]
KILL_AFTER = 2
CHOICES = ["Dog", "Rooster", "Speech", "Rain"]


GAINS = (0.5,)  # written anew (a level changed): recordings no other test has cached
COUNT = len(SOUNDS + DIGITS) * len(GAINS)


def questions(tmp_path: Path) -> Path:
    audio = tmp_path / "audio"
    audio.mkdir()
    rows = []
    answers = ["Dog", "Rooster"] + ["Speech"] * len(DIGITS)
    for name, answer in zip(SOUNDS + DIGITS, answers, strict=True):
        samples, rate = sf.read(FIXTURES / name)
        for gain in GAINS:
            file = f"{gain}_{name}"
            sf.write(audio / file, samples * gain, rate)
            rows.append({"id": file, "audio_id": f"./{file}", "question": "Which sound is heard?",
                         "choices": CHOICES, "answer": answer, "task": "sound"})  # fmt: skip
    path = tmp_path / "q.json"
    path.write_text(json.dumps(rows))
    return path


def command(questions: Path, data: Path) -> list[str]:
    return [
        sys.executable, "-m", "bench", "run", "--questions", str(questions),
        "--audio-dir", str(questions.parent / "audio"), "--data-dir", str(data),
        "--planner", "offline", "--tools", "sound_events,transcribe", "--executor", "local",
        "--concurrency", "1", "--quiet",
    ]  # fmt: skip


def run_to_end(args: list[str]) -> dict:
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def scored(data: Path) -> int:
    try:
        with sqlite3.connect(data / "audio_agent.sqlite3", timeout=0.2) as conn:
            return conn.execute("SELECT count(*) FROM bench_results WHERE score IS NOT NULL")\
                .fetchone()[0]  # fmt: skip
    except sqlite3.OperationalError:  # not created yet
        return 0


def ended_runs_per_message(data: Path) -> dict[str, int]:
    with sqlite3.connect(data / "audio_agent.sqlite3") as conn:
        rows = conn.execute(
            "SELECT m.text || m.id, count(r.id) FROM messages m JOIN runs r ON r.message_id = m.id"
            " WHERE r.status IN ('ok', 'forced', 'degraded', 'failed') GROUP BY m.id"
        ).fetchall()
    return dict(rows)


def totals(report: dict) -> dict:
    config = report["configurations"][0]
    return {k: config[k] for k in ("answered", "accuracy", "exact_choice", "guesses",
                                   "no_tool_calls", "failed_runs", "groups")} | {
        "calls": config["per_question"]["calls"], "cost": config["total_cost"],
    }  # fmt: skip


def run_here(args: list[str]) -> dict:
    """The same command in this process with the inline executor (a run never killed, for
    the totals to compare with: two process starts fewer than ``run_to_end``)."""
    from bench.__main__ import parser
    from bench.run_command import run

    inline = [*args[args.index("run") :]]
    inline[inline.index("--executor") + 1] = "inline"
    return json.loads(json.dumps(run(parser().parse_args(inline)), default=str))


def test_sigkill_then_restart_runs_nothing_twice_and_totals_match(tmp_path: Path) -> None:
    file = questions(tmp_path)
    clean = run_here(command(file, tmp_path / "clean"))

    killed_dir = tmp_path / "killed"
    process = subprocess.Popen(command(file, killed_dir), cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + start_deadline_s()
    while scored(killed_dir) < KILL_AFTER and process.poll() is None:
        assert time.monotonic() < deadline, "no question scored in time"
        time.sleep(0.05)
    assert process.poll() is None, "finished before it could be killed"
    pool = descendants(process.pid)  # the process pool's worker(s)
    assert pool, "no pool worker below the benchmark process"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    before = scored(killed_dir)
    assert KILL_AFTER <= before < COUNT
    # The pool's workers die with their parent: once they are gone nothing more is written.
    deadline = time.monotonic() + start_deadline_s()
    while any(Path(f"/proc/{pid}").exists() for pid in pool):
        assert time.monotonic() < deadline, "the pool's worker outlived the killed benchmark"
        time.sleep(0.05)
    assert scored(killed_dir) == before

    resumed = run_to_end(command(file, killed_dir))
    assert resumed["bench_run"]  # the same benchmark run, continued
    assert resumed["this_call"]["ran"] == COUNT - before
    assert resumed["this_call"]["reused"] == 0
    assert totals(resumed) == totals(clean)
    per_message = ended_runs_per_message(killed_dir)
    assert len(per_message) == COUNT and set(per_message.values()) == {1}
