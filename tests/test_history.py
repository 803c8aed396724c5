"""The sidebar's history list: titles with the recordings' names and a relative date, day
groups, one Tab stop, escaping; and the one query that finds the recordings' names."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent.audio import AudioRef
from frontend import history
from storage import Store

NOW = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def entry(i: str, title: str, ago: timedelta, names: tuple[str, ...] = ()) -> history.Entry:
    return history.Entry(i, title, names, NOW - ago)


def test_relative_dates_and_day_labels() -> None:
    cases = [
        (timedelta(seconds=20), "just now", "Today"),
        (timedelta(minutes=5), "5 min ago", "Today"),
        (timedelta(hours=3), "3 h ago", "Today"),
        (timedelta(hours=20), "yesterday", "Yesterday"),
        (timedelta(days=3), "3 days ago", "Saturday, 28 Nov"),
        (timedelta(days=20), "11 Nov", "11 November"),
        (timedelta(days=400), "27 Oct 2025", "27 October 2025"),
    ]
    for ago, relative, day in cases:
        assert history.relative_date(NOW - ago, NOW) == relative
        assert history.day_label(NOW - ago, NOW) == day
    naive = (NOW - timedelta(minutes=2)).replace(tzinfo=None)  # as SQLite gives it back
    assert history.relative_date(naive, NOW) == "2 min ago"


def test_list_groups_by_day_with_names_and_one_tab_stop() -> None:
    items = [
        entry("c3", "Which sound is heard?", timedelta(minutes=1), ("dog.wav",)),
        entry("c2", "Which sound is heard?", timedelta(minutes=30), ("rain.mp3", "b.wav")),
        entry("c1", "Who speaks <first>?", timedelta(days=1), ()),
    ]
    page = history.history_html(items, selected="c2", now=NOW)
    assert page.count('role="option"') == 3 and page.count('role="group"') == 2
    assert page.index(">Today<") < page.index("c3") < page.index(">Yesterday<")
    assert page.count('tabindex="0"') == 1  # one Tab stop: the open conversation
    assert 'id="conv-c2" data-id="c2"' in page
    assert 'aria-selected="true"' in page.split('id="conv-c2"')[1].split(">")[0]
    # Identical questions told apart by their recordings and dates.
    assert "dog.wav · 1 min ago" in page and "rain.mp3 +1 · 30 min ago" in page
    # The search text holds the title and every file name, lower-cased.
    assert 'data-search="which sound is heard? rain.mp3 b.wav"' in page
    # User text is escaped.
    assert "<first>" not in page and "&lt;first&gt;" in page
    # Without a selection the first entry is the Tab stop.
    plain = history.history_html(items, now=NOW)
    assert plain.split('tabindex="0"')[0].count('role="option"') == 1


def test_empty_list_says_so() -> None:
    assert history.EMPTY_TEXT in history.history_html([], now=NOW)


def test_store_finds_the_recordings_of_many_conversations_at_once(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    try:
        ref = AudioRef(
            id="ab" * 32, path=tmp_path / "a.wav", original_path=tmp_path / "a.mp3",
            duration_s=2.0, format="mp3", original_sample_rate=16_000, original_channels=1,
            name="birds.mp3",
        )  # fmt: skip
        other = replace(ref, id="cd" * 32, name="rain.wav")
        store.recordings.add_audio(ref, size_bytes=10)
        store.recordings.add_audio(other, size_bytes=10)
        first, second, empty = (store.conversations.create_conversation() for _ in range(3))
        owner = first.owner  # as an upload does: the owner's own reference and file name
        store.recordings.add_audio_ref(owner, ref.id, "birds.mp3")
        store.recordings.add_audio_ref(owner, other.id, "rain.wav")
        store.recordings.add_audio_ref("someone-else", ref.id, "their-secret-name.mp3")
        store.messages.add_message(first.id, "user", "q1", audio_id=ref.id)
        store.messages.add_message(first.id, "user", "q2", audio_id=other.id)
        store.messages.add_message(first.id, "user", "q3", audio_id=ref.id)
        store.messages.add_message(second.id, "user", "q", audio_id=other.id)
        store.messages.add_message(empty.id, "user", "no audio")
        names = store.conversations.conversation_audio_names([first.id, second.id, empty.id])
        assert names == {first.id: ["birds.mp3", "rain.wav"], second.id: ["rain.wav"]}
        assert store.conversations.conversation_audio_names([]) == {}
    finally:
        store.close()
