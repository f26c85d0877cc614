"""What the mutation tool mutates: the functions that decide money, expiry, leadership, ownership
and the kill switch, and the mutation operators worth a test run.

A function is named as cosmic-ray names the definition that encloses a mutation: the innermost
``def`` (a nested function by its own name). Everything else in these modules is left alone,
and so is every line inside a logging call (a changed number in a log line is not a defect).
"""

from __future__ import annotations

import re

SCOPE: dict[str, tuple[str, ...]] = {
    # NodePool protect / extend / restore
    "forecaster/actuators/nodepools.py": (
        "protect",
        "restore",
        "protected_until",
        "_retrying",
        "_restore_patch",
        "_annotations",
        "pause_record",
        "_protect_patch",
    ),
    # placeholder converge, scale-down and delete; the pod spec that carries the safety fields
    "forecaster/actuators/prewarm/placeholders.py": (
        "verify_priority_class",
        "apply",
        "remove_bare_pods",
        "_pod_standing",
        "_scale_down_order",
        "delete",
        "_create",
        "_require_existing_is_ours",
        "placeholder_pod_spec",
        "placeholder_job",
        "_ended",
        "_require_ours",
        "_gpus",
        "_created_at",
    ),
    # CapacityBuffer write / renew / expire / ownership
    "forecaster/actuators/prewarm/capacitybuffers.py": (
        "apply",
        "remove",
        "expired",
        "zero",
        "_ensure_template",
        "_template",
        "_buffer",
        "_expires_at",
    ),
    # Lease renew and validity, the cleanup fence
    "forecaster/actuators/coordination/leases.py": (
        "is_leader",
        "remaining_seconds",
        "try_acquire_or_renew",
        "earlier_leader",
        "holder",
        "step_down",
        "release",
        "_body",
        "_round",
        "fence",
        "_earlier",
        "_seconds",
        "_deadline",
        "release_fence",
        "lease_body",
    ),
    # the observer's accounting of the GPUs we hold (launching nodes, shared nodes)
    "forecaster/actuators/observe/observer.py": (
        "_ready",
        "_allocatable",
        "_node_gpus",
        "_snapshot",
        "_empty_gpus",
    ),
    # ... and its count of each pool's pods (ours apart; another team's passed over alone)
    "forecaster/actuators/observe/pod_tally.py": (
        "is_placeholder",
        "tally_pods",
        "_count_real",
        "_units",
        "_note_created",
    ),
    # the actuator's per-pool error gate
    "forecaster/actuators/actuator.py": (
        "apply",
        "_carry_out",
        "_set_prewarm",
        "_charge",
    ),
    # the kill-switch read
    "forecaster/actuators/coordination/control.py": ("read",),
    # the daemon's reconcile and stuck logic; the loop's halt, act and spend record
    "forecaster/service/daemon.py": ("stuck", "reconcile", "spend"),
    "forecaster/reconcile/loop.py": ("_act", "_record", "_load_state"),
    # the persisted state: read failing closed, saved when due or a mode changed
    "forecaster/reconcile/persisting.py": ("read_state", "due", "save_state"),
    "forecaster/reconcile/observing.py": ("read_halt",),
    # the expiry and cleanup job
    "forecaster/app/cleanup.py": (
        "cleanup",
        "expire",
        "_served",
        "_restore_nodepools",
        "restore",
        "still_held",
    ),
    "forecaster/actuators/undo.py": ("attempt",),
    # each backend's withdrawal, expiry and the GPUs it holds (the actuator's switch is above)
    "forecaster/actuators/prewarm/placeholder_backend.py": (
        "converge",
        "withdraw",
        "uninstall",
        "still_held",
        "_deleting",
        "_legacy_pods",
    ),
    "forecaster/actuators/prewarm/buffer_backend.py": (
        "held_gpus",
        "uninstall",
        "settle",
        "expire",
        "still_held",
        "_zeroing",
        "remove_drained",
    ),
    # the planner's caps
    "forecaster/core/planner.py": (
        "_limit_room",
        "_cap",
        "billed_gpus",
        "_allocate",
        "_finish",
        "_nodepool_action",
        # its notice path
        "planned_demand",
        "announced_gpus",
        "_trusted_due",
        "_distrusted",
        "_announced_only",
    ),
    "forecaster/core/budget.py": (
        "add_gpu_hours",
        "gpu_hours_last_day",
        "_within_day",
        "drop_through",
        "record_spend",
        "spent_last_day",
    ),
    # announced work: what tenants write, read into items (each source), followed to its end,
    # trusted and charged per namespace, and planned (the planner's notice path)
    "forecaster/actuators/notice/base.py": (
        "listed",
        "list_objects",
        "get_subresource",
        "pool_of",
        "placed",
        "fits",
        "within",
        "allows",
        "announcement",
        "read",
        "_follow_hangs",
        "read_notice",
        "_announced",
        "_listed",
        "_of_namespace",
        "_skipped",
    ),
    "forecaster/actuators/notice/cronjobs.py": (
        "announce",
        "marks",
        "next_run",
        "next_due",
        "_valid",
        "_next_after",
    ),
    "forecaster/actuators/notice/cronworkflows.py": (
        "announce",
        "marks",
        "_run_key",
        "_first_steps",
    ),
    "forecaster/actuators/notice/jobsets.py": (
        "announce",
        "marks",
        "_finished",
        "_started",
        "_eta",
        "_run_seconds",
        "_owner",
    ),
    "forecaster/actuators/notice/argo.py": (
        "announce",
        "marks",
        "step_of",
        "step_item",
        "_waiting",
        "_dependent_steps",
        "_dependencies",
        "_eta",
        "_pod_template",
        "_fan_out",
    ),
    "forecaster/actuators/notice/kueue_pending.py": (
        "announce",
        "_queues",
        "_quota_flavors",
        "_running_ends",
        "_durations_seen",
        "_seen_end",
        "_local_queue",
        "_readable_units",
        "_units",
        "_admitted_in_turn",
        "_items",
    ),
    "forecaster/actuators/notice/kueue_reserved.py": ("announce", "flavor_pools", "pod_set_item"),
    "forecaster/actuators/notice/volcano.py": ("announce", "_pool", "_room", "_asks", "_older"),
    "forecaster/core/notice.py": (
        "__post_init__",
        "due",
        "due_items",
        "observe",
        "_drop_past_cap",
        "shed",
        "_shed",
        "ended",
        "_seen",
        "_came",
        "_outcome",
        "restore",
        "precision",
        "waste_gpu_hours",
        "judged",
        "over_share",
        "over_gpu_share",
        "distrusted",
        "top_namespaces",
        "distrusted_keys",
    ),
    "forecaster/core/notice_use.py": ("came", "record", "_add", "_forget", "gpu_hours", "restore"),
}

# cosmic-ray's operators, as regular expressions over its names, that are worth a test run: a
# negated or shifted comparison, a negated condition, True/False, and/or, a changed number,
# + and -, * and /, a loop that never runs, break/continue, a swallowed exception, a call never
# made. Left out: the bit and power operators and the other arithmetic swaps (each would add
# ten mutants per expression for no new question), the variable replacers (random names) and
# decorator removal.
KEPT_OPERATORS = tuple(
    re.compile(pattern)
    for pattern in (
        # a comparison negated or its boundary moved (not every other comparison: == made <
        # asks nothing != does not)
        r"core/ReplaceComparisonOperator_(Eq_NotEq|NotEq_Eq|Is_IsNot|IsNot_Is)",
        r"core/ReplaceComparisonOperator_(Lt_GtE|Lt_LtE|LtE_Gt|LtE_Lt|Gt_LtE|Gt_GtE|GtE_Lt|GtE_Gt)",
        r"core/AddNot",
        r"core/ReplaceTrueWithFalse",
        r"core/ReplaceFalseWithTrue",
        r"core/ReplaceAndWithOr",
        r"core/ReplaceOrWithAnd",
        r"core/ReplaceBreakWithContinue",
        r"core/ReplaceContinueWithBreak",
        r"core/NumberReplacer",
        r"core/ZeroIterationForLoop",
        r"core/ExceptionReplacer",
        r"core/ReplaceBinaryOperator_(Add_Sub|Sub_Add|Mul_Div|Div_Mul|FloorDiv_Div|Div_FloorDiv)",
        r"core/ReplaceUnaryOperator_(Delete_Not|USub_UAdd)",
        r"forecaster/DropCall",  # ours (bench/mutation/operators.py): a call never made
    )
)

# the shards run side by side, one per core, each in a copy of its own
SHARDS = 2


def kept(operator: str) -> bool:
    """Is ``operator`` one the run spends a test run on?"""
    return any(pattern.fullmatch(operator) for pattern in KEPT_OPERATORS)
