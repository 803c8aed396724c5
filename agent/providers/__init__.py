"""Planner and tool providers: one module per API, each registered with ``register_provider``.

A provider knows everything particular to its API: how to build a planner and a remote tool
from a catalogue entry, what it needs installed, how to classify its SDK's errors, where its
prices are, how to list its models (the doctor), how to warm its SDK up. The catalogue's
``provider = "..."`` field names one. Installed packages add more through the
``audio_agent.providers`` entry-point group (``agent.plugins``). ``local`` (the bundled
offline planner and tools) is not a provider: the registry builds those itself.
"""

from agent.providers.base import (
    Provider,
    UnknownProvider,
    get_provider,
    provider_names,
    providers,
    register_provider,
)

__all__ = [
    "Provider",
    "UnknownProvider",
    "get_provider",
    "provider_names",
    "providers",
    "register_provider",
]
