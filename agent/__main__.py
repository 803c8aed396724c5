"""Command line: ``python -m agent ask FILE "question" --choice A --choice B``.

Streams the same events as the web app: reasoning as it is written, each tool call and
result, then the answer. ``--json`` prints the events as JSON lines instead.
``python -m agent mcp`` starts the MCP server over stdin/stdout, for desktop clients.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import assert_never

from agent import events as ev
from agent.answer import says_it_cannot_tell
from agent.audio import AudioError, AudioStore
from agent.registry import Registry, UnavailableError
from agent.run import RunRequest, run_question
from agent.strategies.options import add_strategy_option


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="ask a question about an audio file")
    ask.add_argument("file", type=Path, help="wav, mp3, ogg, flac, m4a or webm")
    ask.add_argument("question")
    ask.add_argument("--choice", action="append", default=[], help="an answer choice (repeat)")
    ask.add_argument("--planner", default=None, help="planner name (default: first available)")
    ask.add_argument("--tool", action="append", dest="tools", help="enable only these tools")
    ask.add_argument("--preset", default=None, help="a preset from the catalogue file")
    add_strategy_option(ask)
    ask.add_argument(
        "--budget", type=int, default=None, help="max tool calls (default: the strategy's)"
    )
    ask.add_argument("--json", action="store_true", help="print events as JSON lines")
    ask.add_argument("--config", type=Path, default=None, help="catalogue TOML file")
    sub.add_parser("catalogue", help="list planners and tools and whether they are available")
    doctor = sub.add_parser(
        "doctor",
        help="check that each configured remote planner and tool really works (one tiny call each)",
    )
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.add_argument("--config", type=Path, default=None, help="catalogue TOML file")
    doctor.add_argument("--timeout", type=float, default=8.0, help="seconds per call")
    mcp = sub.add_parser(
        "mcp",
        help="the MCP server over stdin/stdout, for desktop clients (--key KEY: whose runs)",
        add_help=False,
    )
    mcp.add_argument("options", nargs=argparse.REMAINDER, help="passed on (try: mcp --help)")
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["mcp"]:  # its options are the server's own (argparse would eat them)
        return _launch_mcp(given[1:])
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.command == "catalogue":
        return _catalogue()
    if args.command == "doctor":
        from agent import doctor as doctor_module

        return doctor_module.main(args.json, args.config, args.timeout)
    return asyncio.run(_ask(args))


def _launch_mcp(options: list[str]) -> int:
    """Become the MCP stdio server, ``python -m backend.http.mcp_stdio``.

    The server needs the service (storage, owners, the run manager) and so lives in
    ``backend``, which nothing in ``agent`` imports: this starts it as a command line would,
    in this process's place (stdin and stdout go straight to it). With no
    ``AUDIO_AGENT_DATA_DIR`` it uses the ``data`` folder beside ``agent/``, where
    ``python app.py`` run from the project folder keeps its history, whatever folder the
    desktop client starts it in."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "backend" / "http" / "mcp_stdio.py").is_file():
        print(
            f"error: no backend/http/mcp_stdio.py in {root}; run it from the project",
            file=sys.stderr,
        )
        return 2
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    env.setdefault("AUDIO_AGENT_DATA_DIR", str(root / "data"))
    command = [sys.executable, "-m", "backend.http.mcp_stdio", *options]
    if os.name == "posix":
        sys.stdout.flush()
        os.execve(sys.executable, command, env)
    import subprocess

    return subprocess.call(command, env=env)


def _catalogue() -> int:
    registry = Registry()
    for kind, entries in registry.catalogue().items():
        print(f"{kind}:")
        for e in entries:
            state = "available" if e["available"] else f"unavailable ({e['reason']})"
            if e.get("retirement"):  # the provider announced the model's end
                state += f"; {e['retirement']}"
            print(f"  {e['name']:<22} {e['label'][:44]:<44} {state}")
    return 0


async def _ask(args: argparse.Namespace) -> int:
    registry = Registry(args.config)
    default_dir = Path(tempfile.gettempdir()) / "audio-agent"
    data_dir = Path(os.environ.get("AUDIO_AGENT_DATA_DIR", default_dir))
    store = AudioStore(data_dir / "audio")
    try:
        audio = store.add_file(args.file)
        if args.preset:
            preset = registry.preset(args.preset)
            args.planner = args.planner or preset["planner"]
            args.tools = args.tools or preset["tools"]
        planner = registry.planner(args.planner or registry.default_planner())
        tools = registry.tools(args.tools)
    except (AudioError, UnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    request = RunRequest(
        question=args.question,
        choices=args.choice,
        audio=[audio],
        planner=planner,
        tools=tools,
        strategy=args.strategy,
        budget=args.budget,
    )
    status = 0
    async for event in run_question(request, store=store, similarity=registry.similarity):
        if args.json:
            print(event.model_dump_json(), flush=True)
        else:
            _print_event(event)
        if event.type == "run_failed":
            status = 1
    return status


_STREAMED_TURNS: set[int] = set()


def _print_event(event: ev.Event) -> None:
    out = sys.stdout
    match event.type:
        case "run_started":
            out.write(f"[{event.planner_label or event.planner}] {event.question}\n")
        case "queued":
            out.write(f"  (queued: {event.ahead} ahead)\n")
        case "planner_delta":
            _STREAMED_TURNS.add(event.turn)
            out.write(event.text)
        case "thought":
            if event.turn not in _STREAMED_TURNS and event.text:
                out.write(f"[{event.step or 'note'}] {event.text}")  # a strategy's own step
            out.write("\n")
        case "tool_call":
            out.write(f"  -> {event.tool} {event.arguments or ''}\n")
        case "tool_result":
            cached = ", cached" if event.cached else ""
            head = f"  <- {event.tool} ({event.duration_s:.2f} s{cached})"
            body = f"ERROR: {event.error}" if event.error else event.output
            out.write(head + ": " + body.replace("\n", "\n     ") + "\n")
        case "verification":
            said = "; ".join(f"{k}: {v}" for k, v in event.answers.items())
            out.write(f"  == compared {said}\n  == {event.resolution}\n")
        case "document":
            out.write(f"  [document v{event.iteration}, {event.note}]\n")
        case "answer":
            shown = event.choice or event.text
            # a best guess reads as one here too, as in the chat, the API and the benchmark;
            # an answer that says "I can't tell" is not dressed up as a guess of something
            label = "Best guess" if event.guess and not says_it_cannot_tell(shown) else "Answer"
            out.write(f"\n{label}: {shown}")
            if event.confidence is not None:
                out.write(f" (confidence {event.confidence:.2f})")
            out.write("\n")
        case "run_finished":
            out.write(
                f"{event.calls} calls, {event.wall_s:.1f} s, "
                f"{event.input_tokens + event.output_tokens} tokens"
                + (f" ({event.cache_read_tokens} cached)" if event.cache_read_tokens else "")
                + f", ${event.cost:.4f}\n"
            )
            if event.status == "degraded":
                out.write(f"Degraded: {', '.join(event.degraded_tools)} failed or timed out\n")
        case "run_failed":
            out.write(f"\nRun failed ({event.kind}): {event.message}\n")
        case _:
            assert_never(event.type)
    out.flush()


if __name__ == "__main__":
    sys.exit(main())
