"""Object semantics of the API server double: resourceVersion, conflicts, patches, selectors.

* Every write bumps a global resourceVersion and stamps it on the object.
* An update or patch whose body carries ``metadata.resourceVersion`` different from the stored
  one fails with 409 Conflict (optimistic concurrency, as the real server does).
* Create of an existing name fails with 409 AlreadyExists.
* Merge patch is RFC 7386 (``null`` deletes a key, lists are replaced whole); strategic merge
  patch is treated the same, which is exact for the fields we patch.
* Every create, replace and delete is kept as a change (``Change``: the object before and
  after) for watches; ``compact()`` forgets them, so a watch resuming from an older
  resourceVersion gets 410 Gone, as after etcd compaction.
* Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``.
  Field selectors: ``metadata.name``, ``metadata.namespace``, ``spec.nodeName``, ``status.phase``.
"""

from __future__ import annotations

import copy
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (resource, namespace, name); namespace "" when cluster-scoped
MAX_CHANGES = 10_000


@dataclass(frozen=True)
class Change:
    """One write, for watches: the object before (None: created) and after (None: deleted)."""

    version: int
    key: Key
    before: Obj | None
    after: Obj | None


class ApiError(Exception):
    """An error the server answers with a Kubernetes Status."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> Obj:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@dataclass
class Store:
    """Thread-safe object storage with the semantics in the module docstring."""

    now: Any = None  # callable returning epoch seconds; set by the server

    def __post_init__(self) -> None:
        self.objects: dict[Key, Obj] = {}
        self.version = 1000
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.changes: list[Change] = []
        self.compacted = self.version
        """Changes up to this resourceVersion are forgotten (a watch from before gets 410)."""

    def _stamp(self, obj: Obj) -> Obj:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        return obj

    def _record(self, key: Key, before: Obj | None, after: Obj | None) -> None:
        """Keep the write at ``self.version`` for watches and wake them."""
        self.changes.append(Change(self.version, key, copy.deepcopy(before), copy.deepcopy(after)))
        if len(self.changes) > MAX_CHANGES:
            self.compacted = self.changes.pop(0).version
        self.changed.notify_all()

    def compact(self) -> None:
        """Forget every change so far (etcd compaction): older watches must relist."""
        with self.lock:
            self.changes.clear()
            self.compacted = self.version

    def changes_since(self, version: int) -> list[Change]:
        """The changes after ``version``; 410 Gone when some of them are forgotten."""
        with self.lock:
            if version < self.compacted:
                raise ApiError(
                    410, "Expired", f"too old resource version: {version} ({self.compacted})"
                )
            return [c for c in self.changes if c.version > version]

    def timestamp(self) -> str:
        return datetime.fromtimestamp(self.now(), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def get(self, key: Key) -> Obj:
        with self.lock:
            if key not in self.objects:
                raise ApiError(404, "NotFound", f'{key[0]} "{key[2]}" not found')
            return copy.deepcopy(self.objects[key])

    def create(self, key: Key, obj: Obj) -> Obj:
        with self.lock:
            if key in self.objects:
                raise ApiError(409, "AlreadyExists", f'{key[0]} "{key[2]}" already exists')
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            meta["name"] = key[2]
            if key[1]:
                meta["namespace"] = key[1]
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self.timestamp()
            meta.pop("resourceVersion", None)
            self.objects[key] = self._stamp(obj)
            self._record(key, None, obj)
            return copy.deepcopy(self.objects[key])

    def replace(self, key: Key, obj: Obj) -> Obj:
        with self.lock:
            current = self.get(key)
            self._check_version(current, obj)
            obj = copy.deepcopy(obj)
            for field in ("uid", "creationTimestamp", "name", "namespace"):
                if field in current["metadata"]:
                    obj["metadata"][field] = current["metadata"][field]
            self.objects[key] = self._stamp(obj)
            self._record(key, current, obj)
            return copy.deepcopy(self.objects[key])

    def patched(self, key: Key, patch: Obj) -> tuple[Obj, Obj]:
        """(current, merged) without storing: the server validates before ``replace``."""
        with self.lock:
            current = self.get(key)
            self._check_version(current, patch)
            merged = merge_patch(current, patch)
            merged["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            return current, merged

    def delete(self, key: Key) -> Obj:
        with self.lock:
            obj = self.get(key)
            del self.objects[key]
            self.version += 1
            obj["metadata"]["resourceVersion"] = str(self.version)
            self._record(key, obj, None)
            return obj

    def list(
        self, resource: str, namespace: str | None, keep: Callable[[Obj], bool] | None = None
    ) -> list[Obj]:
        """Copies of the objects of ``resource`` (in ``namespace``) that ``keep`` accepts."""
        with self.lock:
            chosen = sorted(
                (key, o)
                for key, o in self.objects.items()
                if key[0] == resource and (namespace is None or key[1] == namespace)
            )  # the kind's objects sorted, not every object (a large cluster: 30,000)
            return [copy.deepcopy(o) for _, o in chosen if keep is None or keep(o)]

    @staticmethod
    def _check_version(current: Obj, incoming: Obj) -> None:
        wanted = (incoming.get("metadata") or {}).get("resourceVersion")
        have = current["metadata"]["resourceVersion"]
        if wanted is not None and wanted != have:
            raise ApiError(
                409,
                "Conflict",
                f"Operation cannot be fulfilled: the object has been modified (resourceVersion"
                f" {wanted} != {have}); please apply your changes to the latest version and"
                " try again",
            )


_TERM = re.compile(
    r"^\s*(!)?\s*([\w./-]+)\s*(?:(==|=|!=)\s*([\w./-]*)|\s+(in|notin)\s+\(([^)]*)\))?\s*$"
)


def _split_terms(selector: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in selector:
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
            continue
        depth += char == "("
        depth -= char == ")"
        current += char
    if current.strip():
        terms.append(current)
    return terms


def matches_labels(labels: dict[str, str], selector: str | None) -> bool:
    """Does ``labels`` satisfy the label selector string?"""
    if not selector:
        return True
    for term in _split_terms(selector):
        match = _TERM.match(term)
        if not match:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
        negate, key, op, value, set_op, values = match.groups()
        if set_op:
            options = {v.strip() for v in values.split(",")}
            ok = (
                (labels.get(key) in options) if set_op == "in" else (labels.get(key) not in options)
            )
        elif op in ("=", "=="):
            ok = labels.get(key) == value
        elif op == "!=":
            ok = labels.get(key) != value
        else:
            ok = (key in labels) != bool(negate)
        if not ok:
            return False
    return True


_FIELDS = {
    "metadata.name": lambda o: o["metadata"].get("name"),
    "metadata.namespace": lambda o: o["metadata"].get("namespace"),
    "spec.nodeName": lambda o: o.get("spec", {}).get("nodeName", ""),
    "status.phase": lambda o: o.get("status", {}).get("phase"),
    "reason": lambda o: o.get("reason"),
    "type": lambda o: o.get("type"),
    "involvedObject.kind": lambda o: o.get("involvedObject", {}).get("kind"),
}


def matches_fields(obj: Obj, selector: str | None) -> bool:
    """Does ``obj`` satisfy the field selector string?"""
    if not selector:
        return True
    for term in selector.split(","):
        negate = "!=" in term
        key, _, value = term.replace("!=", "=").replace("==", "=").partition("=")
        if key.strip() not in _FIELDS:
            raise ApiError(400, "BadRequest", f"field label not supported: {key.strip()}")
        equal = (_FIELDS[key.strip()](obj) or "") == value.strip()
        if equal == negate:
            return False
    return True
