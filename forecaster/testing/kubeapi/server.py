"""The HTTP side of the API server double.

Serves, for the real ``kubernetes`` client: pods, nodes, configmaps, events, podtemplates (core
v1), jobs and cronjobs (batch/v1), priorityclasses (scheduling.k8s.io/v1), leases
(coordination.k8s.io/v1), nodepools (karpenter.sh/v1) and - when asked - capacitybuffers
(autoscaling.x-k8s.io/v1beta1), Kueue's kinds and its visibility API's pending workloads,
jobsets (jobset.x-k8s.io/v1alpha2), workflows and cronworkflows (argoproj.io/v1alpha1),
podgroups and queues (scheduling.volcano.sh/v1beta1), with get/list/create/replace/patch/delete
and API discovery.

Lists can be watched (``?watch=true``, ``WatchStream``): from ``resourceVersion`` (410 Gone in
an ERROR event when it is older than the kept changes, see ``Store.compact``), or from now after
the current objects as ADDED when none is given; with the selectors applied to the object
before and after each write, so an object that stops matching is DELETED and one that starts
matching is ADDED, as the real watch cache does; BOOKMARKs when asked; the stream ends after
``timeoutSeconds`` or at ``drop_watches()`` (a connection cut).

For tests: ``requests`` records every request (method, path, query, content type, body);
``writes()`` the mutating ones; ``invalid`` every object refused by schema validation (tests
assert it stays empty); ``faults`` injects errors, delays and 409 storms; ``clock`` is settable.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from forecaster.testing.kubeapi.schemas import validate
from forecaster.testing.kubeapi.store import (
    ApiError,
    Change,
    Key,
    Obj,
    Store,
    matches_fields,
    matches_labels,
)


@dataclass(frozen=True)
class Resource:
    group_version: str  # "v1" for core
    kind: str
    namespaced: bool


RESOURCES = {
    "pods": Resource("v1", "Pod", True),
    "jobs": Resource("batch/v1", "Job", True),
    "cronjobs": Resource("batch/v1", "CronJob", True),
    "nodes": Resource("v1", "Node", False),
    "configmaps": Resource("v1", "ConfigMap", True),
    "events": Resource("v1", "Event", True),
    "podtemplates": Resource("v1", "PodTemplate", True),
    "poddisruptionbudgets": Resource("policy/v1", "PodDisruptionBudget", True),
    "priorityclasses": Resource("scheduling.k8s.io/v1", "PriorityClass", False),
    "leases": Resource("coordination.k8s.io/v1", "Lease", True),
    "nodepools": Resource("karpenter.sh/v1", "NodePool", False),
    "capacitybuffers": Resource("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer", True),
    "clusterqueues": Resource("kueue.x-k8s.io/v1beta2", "ClusterQueue", False),
    "resourceflavors": Resource("kueue.x-k8s.io/v1beta2", "ResourceFlavor", False),
    "workloads": Resource("kueue.x-k8s.io/v1beta2", "Workload", True),
    "localqueues": Resource("kueue.x-k8s.io/v1beta2", "LocalQueue", True),
    "jobsets": Resource("jobset.x-k8s.io/v1alpha2", "JobSet", True),
    "workflows": Resource("argoproj.io/v1alpha1", "Workflow", True),
    "cronworkflows": Resource("argoproj.io/v1alpha1", "CronWorkflow", True),
    "podgroups": Resource("scheduling.volcano.sh/v1beta1", "PodGroup", True),
    "queues": Resource("scheduling.volcano.sh/v1beta1", "Queue", False),
    "clusterroles": Resource("rbac.authorization.k8s.io/v1", "ClusterRole", False),
}
BOOKMARK_SECONDS = 1.0
"""An idle watch that asked for bookmarks gets one this often (the real server: ~1 min)."""
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
PENDING_PATH = re.compile(
    r"^/apis/visibility\.kueue\.x-k8s\.io/v1beta2/clusterqueues/(?P<cq>[^/]+)/pendingworkloads$"
)
"""Kueue's visibility API (an aggregated API server in a real cluster): a ClusterQueue's
pending workloads in admission order (``pending_workloads``)."""
API_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)(?:/(?P<name>[^/]+))?$"
)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any


@dataclass
class Fault:
    method: str
    path: str  # regex searched in the path
    status: int = 500
    times: int = 1
    delay_seconds: float = 0.0
    skip: int = 0
    """Matching requests let through before the fault starts (a list that works once)."""


@dataclass
class Faults:
    rules: list[Fault] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self,
        method: str,
        path: str,
        *,
        status: int = 500,
        times: int = 1,
        delay_seconds: float = 0.0,
        skip: int = 0,
    ) -> None:
        with self.lock:
            self.rules.append(Fault(method, path, status, times, delay_seconds, skip))

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()

    def take(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for rule in self.rules:
                if rule.times > 0 and rule.method in (method, "*") and re.search(rule.path, path):
                    if rule.skip > 0:
                        rule.skip -= 1
                        return None
                    rule.times -= 1
                    return rule
        return None


@dataclass
class WatchStream:
    """One open watch: the events to send, as the real API server sends them."""

    api: KubeApiDouble
    resource: str
    namespace: str | None
    query: dict[str, str]

    def _matches(self, obj: Obj | None) -> bool:
        return (
            obj is not None
            and (self.namespace is None or obj["metadata"].get("namespace") == self.namespace)
            and matches_labels(obj["metadata"].get("labels", {}), self.query.get("labelSelector"))
            and matches_fields(obj, self.query.get("fieldSelector"))
        )

    def _event(self, change: Change) -> Obj | None:
        before, after = self._matches(change.before), self._matches(change.after)
        if change.key[0] != self.resource or not (before or after):
            return None
        if before and after:
            return {"type": "MODIFIED", "object": change.after}
        if after:
            return {"type": "ADDED", "object": change.after}
        gone = copy.deepcopy(change.before or {})
        gone["metadata"]["resourceVersion"] = str(change.version)  # it left at this version
        return {"type": "DELETED", "object": gone}

    def events(self) -> Any:
        """Yield event dicts until the timeout, a dropped connection or server shutdown."""
        store = self.api.store
        generation = self.api.watch_generation
        deadline = time.monotonic() + float(self.query.get("timeoutSeconds") or 1800)
        bookmarks = self.query.get("allowWatchBookmarks") in ("true", "1")
        next_bookmark = time.monotonic() + BOOKMARK_SECONDS
        given = self.query.get("resourceVersion")
        if given in (None, "", "0"):
            with store.lock:
                version = store.version
                current = [o for o in store.list(self.resource, None) if self._matches(o)]
            for obj in current:
                yield {"type": "ADDED", "object": obj}
        else:
            version = int(given)
        while time.monotonic() < deadline and generation == self.api.watch_generation:
            try:
                changes = store.changes_since(version)
            except ApiError as exc:
                yield {"type": "ERROR", "object": exc.status()}
                return
            for change in changes:
                version = change.version
                event = self._event(change)
                if event is not None:
                    yield event
            if bookmarks and not changes and time.monotonic() >= next_bookmark:
                next_bookmark = time.monotonic() + BOOKMARK_SECONDS
                yield {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": RESOURCES[self.resource].kind,
                        "apiVersion": RESOURCES[self.resource].group_version,
                        "metadata": {"resourceVersion": str(store.version)},
                    },
                }
                version = max(version, store.version)
            with store.changed:
                if version >= store.compacted and not store.changes_since(version):
                    store.changed.wait(timeout=0.2)


class KubeApiDouble:
    """Start with ``with KubeApiDouble() as api:``; ``api.url`` is the server address."""

    def __init__(
        self,
        *,
        capacity_buffers: bool = False,
        kueue: bool | str = False,
        jobsets: bool = False,
        argo: bool = False,
        kueue_visibility: bool = False,
        volcano: bool = False,
        start_time: float = 1_800_000_000.0,
    ) -> None:
        """``capacity_buffers``/``kueue``/``jobsets``/``argo``: serve those CRDs (else 404, as
        without them); ``kueue="v1beta1"`` serves Kueue's older API version only;
        ``kueue_visibility``: serve Kueue's visibility API too (pending workloads);
        ``volcano``: serve Volcano's PodGroups and Queues."""
        self.clock = start_time
        self.store = Store(now=lambda: self.clock)
        self.capacity_buffers = capacity_buffers
        self.kueue = bool(kueue)
        self.kueue_version = kueue if isinstance(kueue, str) else "v1beta2"
        self.jobsets = jobsets
        self.argo = argo
        self.kueue_visibility = kueue_visibility
        self.volcano = volcano
        self.requests: list[Request] = []
        self.invalid: list[tuple[str, list[str]]] = []
        self.faults = Faults()
        self.admission: list[Callable[[str, Any], None]] = []
        self.watch_generation = 0
        """Bumped by ``drop_watches``: every open watch ends."""
        """Admission hooks run on every create (resource, body), before it is stored."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> KubeApiDouble:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop_watches()
        self._server.shutdown()
        self._server.server_close()

    # ---- inspection helpers for tests --------------------------------------------------
    def drop_watches(self) -> None:
        """End every open watch stream (a connection cut or an API server restart)."""
        self.watch_generation += 1
        with self.store.changed:
            self.store.changed.notify_all()

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method in WRITE_METHODS]

    def objects(self, resource: str, namespace: str | None = None) -> list[Obj]:
        return self.store.list(resource, namespace)

    def put(self, resource: str, obj: Obj) -> Obj:
        """Create an object directly (test setup), validated like any other."""
        key = self._key(resource, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        self._validate(resource, obj)
        return self.store.create(key, obj)

    def collect_garbage(self, owner_uid: str) -> None:
        """Delete every object owned by ``owner_uid``, recursively (the garbage collector)."""
        with self.store.lock:
            for (resource, namespace, name), obj in list(self.store.objects.items()):
                owners = obj["metadata"].get("ownerReferences") or []
                if any(o.get("uid") == owner_uid for o in owners):
                    gone = self.store.delete((resource, namespace, name))
                    self.collect_garbage(gone["metadata"]["uid"])

    @staticmethod
    def _key(resource: str, namespace: str, name: str) -> Key:
        return (resource, namespace if RESOURCES[resource].namespaced else "", name)

    def _validate(self, resource: str, obj: Obj) -> None:
        problems = validate(obj)
        if problems:
            self.invalid.append((resource, problems))
            raise ApiError(422, "Invalid", f"{RESOURCES[resource].kind} is invalid: {problems}")

    # ---- request handling ----------------------------------------------------------------
    def handle(
        self, method: str, raw_path: str, content_type: str, body: Any
    ) -> tuple[int, Obj | WatchStream]:
        url = urlparse(raw_path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        self.requests.append(Request(method, path, query, content_type, copy.deepcopy(body)))
        fault = self.faults.take(method, path)
        if fault:
            if fault.delay_seconds:
                time.sleep(fault.delay_seconds)
            if fault.status:
                return fault.status, ApiError(
                    fault.status, "InjectedFault", f"injected {fault.status}"
                ).status()
        answered = self._discovery(path) or self._aggregated(method, path)
        if answered is not None:
            return answered
        match = API_PATH.match(path)
        if not match or match.group("resource") not in RESOURCES:
            return 404, ApiError(404, "NotFound", f"the server could not find {path}").status()
        resource = match.group("resource")
        spec = RESOURCES[resource]
        group_version = match.group("core") or f"{match.group('group')}/{match.group('version')}"
        expected = spec.group_version
        if expected.startswith("kueue.x-k8s.io/"):
            expected = f"kueue.x-k8s.io/{self.kueue_version}"
        if group_version != expected or not self._serves(resource):
            return 404, ApiError(404, "NotFound", f"the server could not find {path}").status()
        namespace, name = match.group("ns") or "", match.group("name")
        try:
            if method == "POST" and name is None:
                for admit in self.admission:  # like admission plugins: mutate or refuse (403)
                    admit(resource, body)
            return self._dispatch(method, resource, namespace, name, query, content_type, body)
        except ApiError as exc:
            return exc.code, exc.status()

    def _dispatch(
        self,
        method: str,
        resource: str,
        namespace: str,
        name: str | None,
        query: dict[str, str],
        content_type: str,
        body: Any,
    ) -> tuple[int, Obj | WatchStream]:
        if name is None:
            if method == "GET":
                return 200, self._list(resource, namespace, query)
            if method == "POST":
                obj_name = body["metadata"].get("name") or body["metadata"]["generateName"] + str(
                    self.store.version
                )
                body["metadata"]["name"] = obj_name
                body["metadata"].pop("generateName", None)
                self._validate(resource, body)
                return 201, self.store.create(self._key(resource, namespace, obj_name), body)
            raise ApiError(405, "MethodNotAllowed", f"{method} on a collection")
        key = self._key(resource, namespace, name)
        if method == "GET":
            return 200, self.store.get(key)
        if method == "PUT":
            self._validate(resource, body)
            return 200, self.store.replace(key, body)
        if method == "PATCH":
            if "merge-patch" not in content_type and "strategic-merge-patch" not in content_type:
                raise ApiError(415, "UnsupportedMediaType", f"patch type {content_type} not served")
            _, merged = self.store.patched(key, body)
            self._validate(resource, merged)
            return 200, self.store.replace(key, merged)
        if method == "DELETE":
            deleted = self.store.delete(key)
            if (
                (body or {}).get("propagationPolicy") or query.get("propagationPolicy")
            ) != "Orphan":
                self.collect_garbage(deleted["metadata"]["uid"])
            return 200, deleted
        raise ApiError(405, "MethodNotAllowed", method)

    def _list(self, resource: str, namespace: str, query: dict[str, str]) -> Obj | WatchStream:
        """The list (at the version it is at), or a watch when asked for."""
        spec = RESOURCES[resource]
        if query.get("watch") in ("true", "1"):
            return WatchStream(
                self, resource, namespace if spec.namespaced and namespace else None, query
            )
        with self.store.lock:  # the items and the version they are at, together
            items = self.store.list(
                resource,
                namespace if spec.namespaced and namespace else None,
                lambda o: (
                    matches_labels(o["metadata"].get("labels", {}), query.get("labelSelector"))
                    and matches_fields(o, query.get("fieldSelector"))
                ),
            )
            version = self.store.version
        return {
            "kind": f"{spec.kind}List",
            "apiVersion": spec.group_version,
            "metadata": {"resourceVersion": str(version)},
            "items": items,
        }

    def _aggregated(self, method: str, path: str) -> tuple[int, Obj] | None:
        """The aggregated APIs the double serves (Kueue's visibility API, when asked)."""
        pending = PENDING_PATH.match(path)
        if not (pending and method == "GET" and self.kueue and self.kueue_visibility):
            return None
        try:
            return 200, self.pending_workloads(pending.group("cq"))
        except ApiError as exc:
            return exc.code, exc.status()

    def pending_workloads(self, cluster_queue: str) -> Obj:
        """What Kueue's visibility API answers for ``cluster_queue``: its workloads (through
        their LocalQueue) holding no quota and not finished, highest priority first, then
        oldest, with their positions (``PendingWorkloadsSummary``, visibility v1beta2)."""
        self.store.get(("clusterqueues", "", cluster_queue))  # 404 when there is none
        queues = {
            (q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"].get("clusterQueue")
            for q in self.store.list("localqueues", None)
        }
        waiting = []
        for wl in self.store.list("workloads", None):
            meta, status = wl["metadata"], wl.get("status") or {}
            held = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
            if queues.get((meta["namespace"], wl["spec"].get("queueName"))) != cluster_queue:
                continue
            if not held & {"QuotaReserved", "Finished"}:
                waiting.append(wl)
        waiting.sort(
            key=lambda w: (-int(w["spec"].get("priority", 0)), w["metadata"]["creationTimestamp"])
        )
        in_local: dict[str, int] = {}
        items = []
        for position, wl in enumerate(waiting):
            meta, local = wl["metadata"], wl["spec"]["queueName"]
            items.append(
                {
                    "metadata": {
                        "name": meta["name"],
                        "namespace": meta["namespace"],
                        "creationTimestamp": meta["creationTimestamp"],
                    },
                    "priority": int(wl["spec"].get("priority", 0)),
                    "localQueueName": local,
                    "positionInClusterQueue": position,
                    "positionInLocalQueue": in_local.get(local, 0),
                }
            )
            in_local[local] = in_local.get(local, 0) + 1
        return {
            "kind": "PendingWorkloadsSummary",
            "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
            "metadata": {"creationTimestamp": None},
            "items": items,
        }

    def _serves(self, resource: str) -> bool:
        if resource == "capacitybuffers":
            return self.capacity_buffers
        if resource == "jobsets":
            return self.jobsets
        if resource in ("workflows", "cronworkflows"):
            return self.argo
        if resource in ("podgroups", "queues"):
            return self.volcano
        if RESOURCES[resource].group_version.startswith("kueue.x-k8s.io/"):
            return self.kueue
        return True

    def _discovery(self, path: str) -> tuple[int, Obj] | None:
        groups = {
            r.group_version
            for name, r in RESOURCES.items()
            if "/" in r.group_version and self._serves(name)
        }
        if path == "/apis":
            return 200, {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": gv.split("/")[0],
                        "versions": [{"groupVersion": gv, "version": gv.split("/")[1]}],
                        "preferredVersion": {"groupVersion": gv, "version": gv.split("/")[1]},
                    }
                    for gv in sorted(groups)
                ],
            }
        for gv in groups:
            if path == f"/apis/{gv}":
                resources = [
                    {
                        "name": n,
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "verbs": ["get", "list", "create", "update", "patch", "delete"],
                    }
                    for n, r in RESOURCES.items()
                    if r.group_version == gv
                ]
                return 200, {
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": gv,
                    "resources": resources,
                }
        return None


def _handler(api: KubeApiDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            code, payload = api.handle(
                self.command, self.path, self.headers.get("Content-Type", ""), body
            )
            if isinstance(payload, WatchStream):
                self._stream(payload)
                return
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def _stream(self, watch: WatchStream) -> None:
            """Newline-delimited JSON events, one HTTP/1.1 chunk each (as the real server)."""
            self.protocol_version = "HTTP/1.1"
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")  # as every other response here
                self.end_headers()
                for event in watch.events():
                    line = json.dumps(event).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped watching
            self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, *args: object) -> None:
            pass

    return Handler
