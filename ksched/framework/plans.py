"""Per-pod plans: which plugins a cycle can leave out for a pod, decided once per combination of
pod features from the plugins' ``skips_pods_without`` declarations."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from ksched.framework.interface import (
    FilterPlugin,
    NormalizeScorePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from ksched.model.pod import Pod


@dataclass(frozen=True, slots=True)
class Plan:
    """The PreFilter / PreScore plugins to call for pods with one combination of features, the
    plugins already known to skip, and the Filter plugins and scorers left once those are taken
    out (a PreFilter / PreScore that returns Skip during the cycle still removes more)."""

    pre_filter: list[PreFilterPlugin]
    skip_filter: frozenset[str]
    pre_score: list[PreScorePlugin]
    skip_score: frozenset[str]
    filters: list[FilterPlugin]
    scorers: list[tuple[ScorePlugin, str, int, NormalizeScorePlugin | None]]


class Gates:
    """Per-profile: which plugins skip which pods, from their ``skips_pods_without`` declarations.

    A cycle reads each declared Pod attribute once (``attrgetter``, in C) and looks up the plan for
    that combination of present/absent features, instead of calling every gated plugin's PreFilter
    and PreScore to hear "Skip". Plans are built on first use; there are at most 2^attributes.
    """

    def __init__(
        self,
        pre_filter: list[PreFilterPlugin],
        pre_score: list[PreScorePlugin],
        filters: list[FilterPlugin],
        scorers: list[tuple[ScorePlugin, str, int, NormalizeScorePlugin | None]],
    ) -> None:
        self._pre_filter = pre_filter
        self._pre_score = pre_score
        self._filters = filters
        self._scorers = scorers
        attrs: list[str] = []
        for p in (*pre_filter, *pre_score):
            attr = getattr(p, "skips_pods_without", None)
            if isinstance(attr, str) and attr not in attrs:
                attrs.append(attr)
        self._attrs = tuple(attrs)
        self._get = attrgetter(*attrs) if attrs else None
        self._plans: dict[tuple[bool, ...], Plan] = {}

    def plan(self, pod: Pod) -> Plan:
        get = self._get
        if get is None:
            key: tuple[bool, ...] = ()
        elif len(self._attrs) == 1:
            key = (bool(get(pod)),)
        else:
            key = tuple(map(bool, get(pod)))
        found = self._plans.get(key)
        if found is None:
            found = self._plans[key] = self._build(key)
        return found

    def _build(self, key: tuple[bool, ...]) -> Plan:
        absent = {a for a, present in zip(self._attrs, key, strict=True) if not present}

        def skips(p: object) -> bool:
            return getattr(p, "skips_pods_without", None) in absent

        skip_filter = frozenset(p.name for p in self._pre_filter if skips(p))
        skip_score = frozenset(p.name for p in self._pre_score if skips(p))
        return Plan(
            [p for p in self._pre_filter if not skips(p)],
            skip_filter,
            [p for p in self._pre_score if not skips(p)],
            skip_score,
            [p for p in self._filters if p.name not in skip_filter],
            [s for s in self._scorers if s[1] not in skip_score],
        )
