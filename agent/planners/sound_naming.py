"""What is making this sound, in the words a person would use, from the sound classifier.

"A dog barking (0.4–3.1 s)." when one source stands out; "Probably a chainsaw, or possibly
an engine (whole recording)." when the evidence is split between two.

The rule, from the classifier's scores (``everyday_names`` holds the names and kinship):

1. A class's *support* is half its score in its best window and half its score over the
   whole clip: how strongly and how steadily it is heard.
2. Classes gather under their head ("Bark", "Howl" under "Dog"; "Caw" under "Crow" under
   "Bird"): a group's support is its best member's, and the group is named by its most
   specific member among the confident ones (at least ``CHILD_SHARE`` of the group's
   support): "a crow cawing" rather than "a bird".
3. Groups are ranked by support weighted by how well they name a source: a source in
   full, a sound's quality ("Whir", "Rumble") at ``VAGUE_WEIGHT``, a broad parent
   ("Animal", "Vehicle") at ``GENERIC_WEIGHT`` (so a child at 30 % of its parent's support
   wins: the most specific confident child). The place and the recording ("Inside, small
   room", "Echo", "Silence") name nothing.
4. The evidence is *split* when the best other source has at least ``SPLIT_SHARE`` of the
   first one's weighted support: the answer names both, most likely first.
5. The time span: the windows where the named group scores at least half its peak, narrowed
   to the stretches that stand out from the background (unless those cover under
   ``NARROW_SHARE`` of them); "whole recording" when they cover ``WHOLE_SHARE`` of it.

The thresholds are first settings, not calibrated: ``Naming`` exposes the quantities
(support, rival share, tier) and ``Naming.strength`` is what the planner's confidence table
is fitted from.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from agent.planners.everyday_names import (
    GENERIC,
    NOT_A_SOURCE,
    SOURCE,
    VAGUE,
    depth,
    everyday_name,
    head_of,
    tier,
)
from agent.planners.offline_evidence import Evidence
from agent.planners.offline_presence import frames_of, refine, spans_above
from agent.planners.sound_match import group

MIN_PEAK = 0.05  # a class scoring less than this in its best window is not heard
CHILD_SHARE = 0.5  # a child this close to its group's best names the group
VAGUE_WEIGHT = 0.5  # a sound's quality ("Whir") counts for half a named source
GENERIC_WEIGHT = 0.3  # a broad parent ("Animal") counts for less still
TIER_WEIGHT = {SOURCE: 1.0, VAGUE: VAGUE_WEIGHT, GENERIC: GENERIC_WEIGHT}
SPLIT_SHARE = 0.6  # a second source with this share of the first's support: evidence split
SURE_SUPPORT = 0.5  # below this weighted support the answer says "probably" (first setting)
WHOLE_SHARE = 0.8  # spans covering this share of the recording: "whole recording"
NARROW_SHARE = 0.25  # stand-out stretches covering less of the windows than this: not the sound
RIVAL_PENALTY = 0.5  # how much an even split takes off the strength


@dataclass(frozen=True)
class Group:
    """The classes gathered under one head, and what they say together."""

    head: str
    phrase: str  # the everyday name of its most specific confident member
    members: tuple[str, ...]  # the group's classes that are heard, best first
    support: float  # the best member's support (0..1)
    tier: str  # how well it names a source (``everyday_names.tier``)

    @property
    def weighted(self) -> float:
        return self.support * TIER_WEIGHT[self.tier]


@dataclass(frozen=True)
class Naming:
    """What is making the sound, and how sure: the quantities a calibration needs."""

    phrase: str  # the most likely source, in everyday words ("a dog barking")
    alternative: str | None  # a second source when the evidence is split
    support: float  # the first group's weighted support (0..1)
    rival_share: float  # the best other source's weighted support / the first's (0..1)
    tier: str  # the first group's tier: source, vague or generic
    spans: list[tuple[float, float]] = field(default_factory=list)
    whole: bool = False  # heard over (nearly) the whole recording
    ranked: list[Group] = field(default_factory=list)  # every group, best first

    @property
    def split(self) -> bool:
        return self.alternative is not None

    @property
    def sure(self) -> bool:
        """Said without "probably": one source, named as a source, well supported."""
        return not self.split and self.tier == SOURCE and self.support >= SURE_SUPPORT

    @property
    def strength(self) -> float:
        """0..1 support for the answer as given: the first source's weighted support, less
        a share of its rival's (an even split takes off ``RIVAL_PENALTY``)."""
        return round(min(1.0, self.support * (1.0 - RIVAL_PENALTY * self.rival_share)), 4)


def supports(evidence: Evidence, within: Collection[str] | None = None) -> dict[str, float]:
    """Per class heard: half its score in its best window, half over the whole clip."""
    frames, _ = frames_of(evidence)
    best: dict[str, float] = {}
    for labels in frames:
        for label, score in labels:
            best[label] = max(best.get(label, 0.0), float(score))
    mean = dict(evidence.labels)
    return {
        label: 0.5 * peak + 0.5 * float(mean.get(label, 0.0))
        for label, peak in best.items()
        if peak >= MIN_PEAK and tier(label) != NOT_A_SOURCE and (within is None or label in within)
    }


def groups(evidence: Evidence, within: Collection[str] | None = None) -> list[Group]:
    """The heard classes gathered under their heads, best weighted support first;
    ``within``: only these classes (a branch: "what animal")."""
    support = supports(evidence, within)
    gathered: dict[str, list[str]] = {}
    for label in sorted(support, key=lambda lb: -support[lb]):
        gathered.setdefault(head_of(label), []).append(label)
    out = []
    for head, members in gathered.items():
        top = support[members[0]]
        confident = [m for m in members if support[m] >= CHILD_SHARE * top]
        named = max(confident, key=lambda m: (depth(m), support[m]))  # the most specific
        tiers = {tier(m) for m in members}
        kind = SOURCE if SOURCE in tiers else VAGUE if VAGUE in tiers else GENERIC
        out.append(Group(head, everyday_name(named), tuple(members), round(top, 4), kind))
    out.sort(key=lambda g: (-g.weighted, g.phrase))
    return out


def name_sound(evidence: Evidence, within: Collection[str] | None = None) -> Naming | None:
    """What is making the sound (the module's rule); None when the classifier names
    nothing that is a source."""
    ranked = groups(evidence, within)
    if not ranked:
        return None
    first = ranked[0]
    rivals = [g for g in ranked[1:] if g.tier == SOURCE and g.phrase != first.phrase]
    rival = rivals[0] if rivals else None
    share = rival.weighted / first.weighted if rival is not None and first.weighted > 0 else 0.0
    alternative = rival.phrase if rival is not None and share >= SPLIT_SHARE else None
    spans, whole = _where(first, evidence)
    return Naming(first.phrase, alternative, round(first.weighted, 4), round(min(1.0, share), 4),
                  first.tier, spans, whole, ranked)  # fmt: skip


def _where(group: Group, evidence: Evidence) -> tuple[list[tuple[float, float]], bool]:
    """Where the group is heard: its windows at half its peak or more, narrowed to what
    stands out; and whether that is (nearly) the whole recording."""
    frames, times = frames_of(evidence)
    duration = evidence.duration_s or (times[-1][1] if times else 0.0)
    if len(frames) < 2 or duration <= 0:
        return [(0.0, duration)], True
    members = set(group.members)
    profile = np.array([max((s for lb, s in labels if lb in members), default=0.0)
                        for labels in frames])  # fmt: skip
    peak = float(profile.max())
    windows = spans_above(profile, times, max(MIN_PEAK, 0.5 * peak))
    narrowed = refine(windows, evidence)
    # a stretch that stands out but covers little of the windows is a click within the
    # sound (a bell's strike), not the sound: the windows' times stand
    if _length(narrowed) >= NARROW_SHARE * _length(windows):
        windows = narrowed
    spans = [(max(0.0, a), min(duration, b)) for a, b in windows]
    return spans, _length(spans) >= WHOLE_SHARE * duration


def _length(spans: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def span_text(naming: Naming, limit: int = 3) -> str:
    """The time span: "whole recording", "0.4–3.1 s", "0.4–1.2 s and 2.0–3.1 s" ..."""
    if naming.whole or not naming.spans:
        return "whole recording"
    shown = [f"{a:.1f}–{b:.1f} s" for a, b in naming.spans[:limit]]
    more = len(naming.spans) - limit
    if more > 0:
        return ", ".join(shown) + f" and {more} more time{'s' if more > 1 else ''}"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def naming_sentence(naming: Naming) -> str:
    """The answer: "A dog barking (0.4–3.1 s).", "Probably a chainsaw, or possibly an
    engine (whole recording).", "Probably a whirring machine (whole recording)."."""
    where = span_text(naming)
    if naming.alternative is not None:
        return f"Probably {naming.phrase}, or possibly {naming.alternative} ({where})."
    if not naming.sure:
        return f"Probably {naming.phrase} ({where})."
    return f"{naming.phrase[0].upper()}{naming.phrase[1:]} ({where})."


def branch_of(noun: str) -> frozenset[str] | None:
    """The classes a "what <noun>" question is about ("animal", "vehicle"); None for any
    sound ("what sound", "what noise", or a noun the ontology has no branch for)."""
    if noun in ("", "sound", "sounds", "noise", "noises"):
        return None
    return group(noun) or None
