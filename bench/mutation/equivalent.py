"""Mutants that change no behaviour, each with the reason a reviewer can check.

A mutant is matched by its module, the operator and the stripped source line it changes (line
numbers move; the text of a line rarely does). Listing one here is a claim: the reason says why
no test can tell the mutant from the original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    module: str
    operator: str
    line: str
    reason: str
    mutated: str = ""
    """A regular expression the mutated line must match, when only some of the operator's
    mutants of the line are equivalent (``used_on.get(name, 1)`` but not ``max(1, ...)``)."""

    def matches(self, module: str, operator: str, line: str, mutated: str) -> bool:
        """Is this the listing of the mutant of ``line`` that reads ``mutated``?"""
        return (self.module, self.operator, self.line) == (module, operator, line.strip()) and (
            re.search(self.mutated, mutated) is not None
        )


OBSERVER = "forecaster/actuators/observe/observer.py"
POD_TALLY = "forecaster/actuators/observe/pod_tally.py"
LEASES = "forecaster/actuators/coordination/leases.py"
PLACEHOLDERS = "forecaster/actuators/prewarm/placeholders.py"
BUFFERS = "forecaster/actuators/prewarm/capacitybuffers.py"
NEGATIVE_DEFAULT = (
    "a count read as -1 when missing fails `> 0` exactly as 0 does (the +1 mutants are killed)"
)
NUMBER = "core/NumberReplacer"
PLANNER = "forecaster/core/planner.py"
BUDGET = "forecaster/core/budget.py"
NEGATIVE_ROOM = (
    "a NodePool room of -1 is capped by _cap, which clamps every limit at max(0, limit): 0"
    " placeholders as with 0 (the +1 mutant is killed)"
)

NOTICE = "forecaster/core/notice.py"
NOTICE_BASE = "forecaster/actuators/notice/base.py"

EQUIVALENT: tuple[Equivalent, ...] = (
    Equivalent(
        NOTICE,
        NUMBER,
        "dropped = self._shed(count, now=now, window=0.0)",
        "a shed item never came, and the window only judges whether an item that came gave"
        " notice (ahead): any window gives the same outcome",
    ),
    Equivalent(
        NOTICE,
        "core/ReplaceComparisonOperator_Gt_GtE",
        "np.concatenate(([start], changes[(changes > start) & (changes <= now)], [now]))",
        "start is a moment already (the first array): a change at start adds it twice and"
        " np.unique keeps one",
    ),
    Equivalent(
        NOTICE,
        NUMBER,
        "if self._trust is None or self._trust[0] != asked:",
        "the cache of the answer at this reading: comparing its answer, not its key, misses"
        " every time and computes the same answer again (speed only: bench trust_check)",
        mutated=r"_trust\[ ?-1\]",
    ),
    Equivalent(
        NOTICE,
        "core/ReplaceComparisonOperator_Lt_LtE",
        "if before is not None and before.item.latest_start < read.latest_start:",
        "with equal deadlines the item kept is the one read: its earliest start is min(its"
        " earliest, its latest), its own earliest (an item's earliest never passes its latest)",
    ),
    *(
        Equivalent(
            NOTICE,
            operator,
            "asked = (now, len(self.outcomes), self.outcomes[-1].at if self.outcomes else 0)",
            "the cache key at a reading: at one now the outcomes only grow (they are pruned"
            " when now moves), so now and their number decide it - which outcome's time, or"
            " the empty list's marker, changes nothing (one outcome: [1] and [-2] fail, killed)",
            mutated=mutated,
        )
        for operator, mutated in ((NUMBER, r"outcomes\[- ?0\]|else -1\)"),)
    ),
    Equivalent(
        NOTICE,
        "core/ReplaceComparisonOperator_LtE_Lt",
        "np.concatenate(([start], changes[(changes > start) & (changes <= now)], [now]))",
        "now is a moment already (the last array): a change at now adds it twice and np.unique"
        " keeps one",
    ),
    Equivalent(
        "forecaster/actuators/notice/kueue_pending.py",
        NUMBER,
        "need = _readable_units(wl, queue.resource) if wl else 0",
        "need is only weighed when the workload exists: the next line passes over a missing one"
        " (``wl is None``) before it",
        mutated=r"else -1",
    ),
    Equivalent(
        "forecaster/actuators/notice/volcano.py",
        NUMBER,
        'units = gpu_quantity((obj["spec"].get("minResources") or {}).get(resource, 0))',
        "a group asking none of its pool's resource is refused by ``units <= 0`` whether read as"
        " 0 or -1 (the per-pod check before it raises only above a node's size)",
        mutated=r"get\(resource, -1\)",
    ),
    Equivalent(
        "forecaster/actuators/notice/jobsets.py",
        NUMBER,
        'succeeded, ready = int(done.get("succeeded", 0)), int(done.get("ready", 0))',
        "ready is only added when succeeded < total, where ready + succeeded >= total needs"
        " ready > 0: one left out (0) or read as -1 gives the same no",
        mutated=r'get\("ready", -1\)',
    ),
    Equivalent(
        "forecaster/actuators/notice/volcano.py",
        NUMBER,
        "return fitting[0] if len(fitting) == 1 else None",
        "the one fitting pool is both the first and the last",
        mutated=r"fitting\[ ?-1\]",
    ),
    Equivalent(
        "forecaster/actuators/notice/volcano.py",
        NUMBER,
        'members = max(1, int(obj["spec"].get("minMember", 1)))',
        "a minMember read as 0 when left out is raised to 1 by the max around it",
        mutated=r'get\("minMember", 0\)',
    ),
    Equivalent(
        "forecaster/actuators/notice/volcano.py",
        NUMBER,
        "return 1 << 30",
        "a Queue without a bound: any number past every cap (2^29 GPUs and up) is the same"
        " no-limit",
    ),
    Equivalent(
        "forecaster/actuators/notice/argo.py",
        "core/ReplaceOrWithAnd",
        'labels = (template.get("metadata") or {}).get("labels") or {}',
        "placement reads the pod's spec only: the template's labels are carried and never read",
    ),
    Equivalent(
        "forecaster/actuators/notice/argo.py",
        NUMBER,
        'return node.split("(", 1)[0].rsplit(".", 1)[-1]',
        "the last part of a dotted name is the same whatever the number of splits from the right",
        mutated=r'rsplit\("\.", ?[02]\)\[-1\]',
    ),
    Equivalent(
        NOTICE_BASE,
        "core/ReplaceOrWithAnd",
        'pod = cast(Pod, {"metadata": template.get("metadata") or {}, "spec": spec})',
        "placement reads the pod's spec only (nodeSelector, affinity, tolerations): the"
        " metadata is carried for the type and never read",
    ),
    Equivalent(
        NOTICE_BASE,
        "core/ReplaceTrueWithFalse",
        "sort_keys=True,",
        "the cache key of a template's placement: unsorted keys only split one shape into"
        " more entries, each placed the same",
    ),
    Equivalent(
        NOTICE_BASE,
        NUMBER,
        "times = self._hung.get(status.source, (0, 0))[0]",
        "the default's second element (until) is never read: only [0], times, is",
        mutated=r"\(0, ?-?1\)\)\[0\]",
    ),
    Equivalent(
        BUFFERS,
        NUMBER,
        'if int(buffer["spec"].get("replicas", 0)) > 0 or int(reported or 0) > 0:',
        NEGATIVE_DEFAULT,
        mutated=r'get\("replicas", -1\)|reported or -1',
    ),
    Equivalent(
        BUFFERS,
        NUMBER,
        'if int(b["spec"].get("replicas", 0)) > 0 and _expires_at(b) <= now',
        NEGATIVE_DEFAULT,
        mutated=r'get\("replicas", -1\)',
    ),
    Equivalent(
        PLACEHOLDERS,
        NUMBER,
        "free_slots = [s for s in range(target) if s not in taken][: max(0, target - len(live))]",
        "after the scale-down loop live never exceeds target, so target - len(live) >= 0 and"
        " max(-1, ...) is max(0, ...) (the max(1, ...) mutant is killed)",
        mutated=r"max\( ?-1, target",
    ),
    *(
        Equivalent(
            PLACEHOLDERS,
            operator,
            'taken = {int(j["metadata"]["labels"].get(lbl.SLOT, -1)) for j in live}',
            "only which slot number a new placeholder takes beside an older, slot-less Job: the"
            " number created is the same (there are always at least target - len(live) free"
            " slots), and a slot is only part of a unique name",
        )
        for operator in (NUMBER, "core/ReplaceUnaryOperator_USub_UAdd")
    ),
    Equivalent(
        LEASES,
        "core/ReplaceOrWithAnd",
        "if not isinstance(stamp, str) or not stamp:",
        "a stamp that is not a string, or is empty, then fails timestamp_seconds' parse, whose"
        " ValueError returns the same None",
    ),
    Equivalent(
        OBSERVER,
        NUMBER,
        "stranded += max(0, _allocatable(node, resource) - used_on.get(name, 0))",
        "the default of used_on.get: a busy node has a pod on it, and every pod on a node adds"
        " its GPUs to used_on, so the key is always there",
        mutated=r"used_on\.get\(name, -?1\)",
    ),
    Equivalent(
        OBSERVER,
        NUMBER,
        "per_node = max((_allocatable(n, resource) for n in own), default=0)",
        "the default applies only to a pool with no nodes, whose launching GPUs are 0: the"
        " min(unclaimed_launching, ...) it feeds is 0 whatever the node size",
    ),
    Equivalent(
        OBSERVER,
        NUMBER,
        'pending_ours = whole_node_gpus(ours_on.get("", 0), gpus_per_node=per_node)',
        "-1 GPUs rounds up to whole nodes as 0 does: 0 nodes (the +1 mutant is killed)",
        mutated=r'ours_on\.get\("", -1\)',
    ),
    Equivalent(
        POD_TALLY,
        NUMBER,
        "images[image] = images.get(image, 0) + gpus",
        "the default is added once to every image's count alike, and the counts are only used"
        " to order the images",
    ),
    *(
        Equivalent(
            PLANNER,
            "core/ReplaceComparisonOperator_Gt_GtE",
            line,
            "with the 1e-9 tolerance added, > and >= differ only when the charge exceeds what"
            " is left by exactly 1e-9, which whole GPUs at cents per hour never do",
        )
        for line in (
            "elif price > cost_left + 1e-9:",
            "elif extra * commitment_hours > gpu_hours_left + 1e-9:",
        )
    ),
    Equivalent(
        BUDGET,
        "core/ReplaceComparisonOperator_Gt_GtE",
        "if kept and kept[-1][0] > bucket:  # the clock stepped back: keep the buckets in order",
        "equal bucket starts are handled by the branch before (added to the last bucket), so"
        " >= is only ever reached with >",
    ),
    Equivalent(
        BUDGET,
        "core/ReplaceComparisonOperator_Gt_GtE",
        "if buckets and buckets[-1][0] > at:  # a bucket after ``at``: only after a clock step"
        " back",
        "with the newest bucket starting at ``at`` both branches sum the buckets in (at - DAY, at]",
    ),
    *(
        Equivalent(
            BUDGET,
            operator,
            "spend = gpus * step / 3600 if gpus > 0 else 0.0",
            "0 or fewer GPUs charge nothing either way: 0 * step is 0, and add_gpu_hours drops"
            " a charge <= 0 (the `gpus > 1` mutant is killed)",
            mutated=mutated,
        )
        for operator, mutated in (
            ("core/ReplaceComparisonOperator_Gt_GtE", ""),
            (NUMBER, r"gpus > -1|else -1\.0"),
        )
    ),
    *(
        Equivalent(
            LEASES,
            NUMBER,
            line,
            "leadership lapsed at 0.0 or at -1.0 is lapsed alike: is_leader asks for time left"
            " > 0 and a monotonic clock never reads below 0 (the 1.0 mutant is killed)",
            mutated=r"-1\.0",
        )
        for line in (
            "self._valid_until = started + self.lease_seconds * self.safety if won else 0.0",
            "self._valid_until = 0.0",
        )
    ),
    Equivalent(
        "forecaster/app/cleanup.py",
        "core/ReplaceAndWithOr",
        "if buffers is not None and pools:",
        "pools is only filled when buffers is not None, and _remove_buffers with no pools"
        " returns at once having changed nothing: the `or` differs only in that no-op call",
    ),
    Equivalent(
        "forecaster/app/cleanup.py",
        "core/ReplaceBreakWithContinue",
        "break",
        "with no buffer left to wait for, `continue` skips the sleep as `break` does and the"
        " remaining rounds loop over an empty list: the same calls, the same report",
    ),
    Equivalent(
        "forecaster/service/daemon.py",
        NUMBER,
        "at = self.last.at if self.last else 0",
        "the default is the day's end only before the first tick, when the trail it bounds is"
        " still empty: the spend is zero whatever day is asked",
    ),
    Equivalent(
        "forecaster/actuators/nodepools.py",
        NUMBER,
        'if int(record.get("format", 1)) > lbl.OBJECT_FORMAT:',
        "a record without a format read as format 0 is as readable as format 1: neither is"
        " newer than OBJECT_FORMAT (the 2 mutant is killed)",
        mutated=r'get\("format", 0\)',
    ),
    Equivalent(
        PLANNER,
        "core/ReplaceAndWithOr",
        "if not acts and mode is Mode.FORECAST_ONLY:",
        "mode is FORECAST_ONLY exactly when the pool does not act (_observe_only decides both),"
        " so either operand alone is the condition",
    ),
    Equivalent(
        PLANNER,
        NUMBER,
        "return 1 << 30",
        "an allowed uncapped pool's room: any number past every cap (2^29 GPUs and up) is"
        " the same no-limit",
    ),
    *(
        Equivalent(PLANNER, NUMBER, line, NEGATIVE_ROOM, mutated=r"return -1|max\( ?-1,")
        for line in (
            "return 0",
            "return max(0, snap.nodepool_limit_gpus - max(in_use, snap.real_demand_gpus))",
        )
    ),
)


def reason_for(module: str, operator: str, line: str, mutated: str = "") -> str | None:
    """Why the mutant is equivalent, if it is listed (or of a kind that always is)."""
    line = line.strip()
    signature = re.search(r"(^|, )\*,", line) is not None  # a bare * is valid in a signature only
    if operator.startswith("core/ReplaceBinaryOperator_Mul_") and signature:
        # cosmic-ray reads a signature's bare ``*`` as multiplication; ``/`` there makes the
        # parameters before it positional-only, and every caller passes those by position (a
        # caller by keyword would fail mypy and the tests)
        return "the keyword-only marker of a signature made positional-only (callers unchanged)"
    listing = next((e for e in EQUIVALENT if e.matches(module, operator, line, mutated)), None)
    return listing.reason if listing else None
