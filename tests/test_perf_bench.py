"""The peer bench's parts: its model server speaks the protocol our planner streams, a
planner keeps one connection to it, and the ratios are per round."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from agent.audio import AudioStore
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.remote import ModelConfig
from agent.run import RunRequest, run_question
from agent.testing import ScriptedTool
from bench.peer_server import TOOLS, PeerServer
from bench.peers import Comparison
from bench.prompt_tokens import shared_prefix
from tests.servers import serve


async def test_our_planner_answers_through_the_peer_server_on_one_connection(tmp_path: Path):
    server = PeerServer()
    wav = tmp_path / "s.wav"
    sf.write(wav, np.zeros(16_000, dtype=np.float32), 16_000)
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(wav)
    with serve(server) as base:
        config = ModelConfig.from_entry(
            {"name": "p", "provider": "openai_compatible", "model": "m", "base_url": f"{base}/v1"}
        )
        planner = OpenAICompatPlanner(config)  # one planner, as the registry keeps one
        tools = [ScriptedTool(name, "ok") for name in TOOLS]
        for _ in range(3):
            request = RunRequest("Use all three tools, then answer.", [audio], planner, tools)
            events = [e async for e in run_question(request, store=store)]
            assert [e.tool for e in events if e.type == "tool_call"] == list(TOOLS)
            answer = next(e for e in events if e.type == "answer")
            assert answer.text == "done"
            assert events[-1].type == "run_finished"
    assert server.requests == 6
    assert server.connections == 1  # kept alive: every request on the first connection


def test_ratios_are_the_median_of_each_rounds_ratio():
    result = Comparison(0.0)
    result.runs = {"ours": [1.0, 2.0, 9.0], "smolagents": [2.0, 1.0, 10.0]}
    result.constructs = {"ours": [0.0, 0.0, 0.0], "smolagents": [1.0, 1.0, 1.0]}
    assert result.ratio("ours", "smolagents", inside=False) == 0.9  # 0.5, 2.0, 0.9
    assert result.ratio("ours", "smolagents", inside=True) == 9.0 / 11.0  # 1/3, 1.0, 9/11


def test_the_cacheable_prefix_is_where_two_requests_part():
    assert shared_prefix([1, 2, 3, 4], [1, 2, 9, 4]) == 2
    assert shared_prefix([], [1]) == 0
    assert shared_prefix([1, 2], [1, 2, 3]) == 2


def test_question_cost_reads_only_prefixes_the_provider_caches() -> None:
    """A request shorter than the provider's minimum is never cached: OpenAI's first request
    of 900 tokens pays full price, its second's 1,600-token prefix the cache price."""
    from agent.prices import Prices
    from bench.prompt_tokens import PlannerPrice

    prices = Prices(input_per_mtok=2.0, cache_read_per_mtok=0.5, output_per_mtok=8.0)
    openai = PlannerPrice("gpt", prices, cache_min_tokens=1024)
    fresh = openai.cost([900, 1_700], [800, 1_600], 100, cache=False)
    cached = openai.cost([900, 1_700], [800, 1_600], 100, cache=True)
    assert fresh == pytest.approx((2_600 * 2.0 + 100 * 8.0) / 1e6)
    assert cached == pytest.approx((1_000 * 2.0 + 1_600 * 0.5 + 100 * 8.0) / 1e6)
