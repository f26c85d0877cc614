"""A thin wrapper over the ``kubernetes`` client: plain dicts in and out, our errors out.

* Reads return parsed JSON dicts (``_preload_content=False``), never client model objects.
* 404 on a read -> ``None``; 409 -> ``ConflictError`` (callers re-read and retry);
  anything else -> ``ActuationError`` naming the verb and object, with the ApiException as cause.
* 5xx, 429 and connection errors are retried with exponential backoff, a few times.
* Inside ``within(seconds)`` (this thread), every request's timeout is cut to what is left and no
  attempt starts past it: what the notice sources read through, so an API that hangs costs a
  stated time per tick, not the timeout times the retries.
* Every create, patch and replace carries ``fieldManager=forecaster`` (``managedFields`` then
  name exactly our fields, so Argo CD / Flux can be told to ignore them; docs/operations.md).
* With ``dry_run`` no write leaves the process: it is logged as "dry-run: would ..." instead.
* With a write ``guard`` (the leader elector's ``remaining_seconds``), every attempt of every
  write first checks that this replica still leads for at least ``MIN_WRITE_SECONDS`` and cuts
  the request timeout to end before leadership can lapse; otherwise ``NotLeaderError``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from forecaster.actuators import labels as lbl
from forecaster.actuators.manifests import (
    CapacityBuffer,
    ConfigMap,
    Event,
    Job,
    Lease,
    Node,
    NodePool,
    Pod,
    PodDisruptionBudget,
    PodTemplate,
    PriorityClass,
)
from forecaster.errors import (
    ActuationError,
    ConfigError,
    ConflictError,
    NotLeaderError,
    WatchExpiredError,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
_RETRYABLE = {429, 500, 502, 503, 504}
__all__ = ["ConflictError", "Kube", "api_client"]
MIN_WRITE_SECONDS = 1.0
"""A write is sent only with at least this much leadership left, and must end 0.5 s before."""
BUFFERS = ("autoscaling.x-k8s.io", "v1beta1")


def api_client(*, host: str | None = None, timeout_seconds: float = 10.0) -> client.ApiClient:
    """An ApiClient for ``host`` (tests), else in-cluster config, else the local kubeconfig."""
    if host is not None:
        configuration = client.Configuration(host=host)
    else:
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            try:
                config.load_kube_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except (config.ConfigException, OSError) as exc:
                raise ConfigError(
                    "no Kubernetes API to talk to: not running in a cluster and no usable"
                    f" kubeconfig ({str(exc).splitlines()[0]}); set KUBECONFIG or pass --kube-host"
                ) from None
    configuration.retries = False
    api = client.ApiClient(configuration)
    api.rest_client.pool_manager.connection_pool_kw["timeout"] = urllib3.Timeout(timeout_seconds)
    return api


class Kube:
    """The verbs forecaster uses, on plain dicts."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        dry_run: bool,
        retries: int = 3,
        backoff_seconds: float = 0.2,
        request_timeout_seconds: float = 10.0,
    ) -> None:
        self.dry_run = dry_run
        # typed as Any: we pass and read plain dicts, not the client's model classes
        self._core: Any = client.CoreV1Api(api)
        self._custom: Any = client.CustomObjectsApi(api)
        self._scheduling: Any = client.SchedulingV1Api(api)
        self._policy: Any = client.PolicyV1Api(api)
        self._rbac: Any = client.RbacAuthorizationV1Api(api)
        self._coordination: Any = client.CoordinationV1Api(api)
        self._batch: Any = client.BatchV1Api(api)
        self._retries = retries
        self._backoff = backoff_seconds
        self._timeout = request_timeout_seconds
        self.guard: Callable[[], float] | None = None
        """Seconds this replica may still write (None: no leader election, always)."""
        self._local = threading.local()

    # ---- reads ---------------------------------------------------------------------------
    def list_pods(
        self, *, namespace: str | None = None, labels: str | None = None, fields: str | None = None
    ) -> list[Pod]:
        """Pods matching the selectors, in one namespace or all."""
        return self.list_pods_versioned(namespace=namespace, labels=labels, fields=fields)[0]

    def list_pods_versioned(
        self, *, namespace: str | None = None, labels: str | None = None, fields: str | None = None
    ) -> tuple[list[Pod], str]:
        """The pods and the list's resourceVersion (where a watch of the same pods resumes)."""
        if namespace is None:
            call = lambda: self._core.list_pod_for_all_namespaces(  # noqa: E731
                label_selector=labels, field_selector=fields, **self._opts()
            )
        else:
            call = lambda: self._core.list_namespaced_pod(  # noqa: E731
                namespace, label_selector=labels, field_selector=fields, **self._opts()
            )
        listed = self._read(call, f"list pods ({labels or 'all'})")
        return list(listed["items"]), str(listed["metadata"]["resourceVersion"])

    def watch_pods(
        self,
        *,
        resource_version: str,
        labels: str | None = None,
        fields: str | None = None,
        timeout_seconds: int = 300,
    ) -> Iterator[Obj]:
        """Watch events (``type``, ``object`` as a dict) of the pods of every namespace after
        ``resource_version``, until the server ends the stream (``timeout_seconds``).

        BOOKMARKs are asked for (they carry the resourceVersion to resume from); 410 Gone
        raises ``WatchExpiredError`` (list again); any other failure ``ActuationError``.
        Not retried: the caller relists, which is the only safe resumption after a gap.
        """
        what = f"watch pods ({labels or 'all'})"
        try:
            response = self._core.list_pod_for_all_namespaces(
                watch=True,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                label_selector=labels,
                field_selector=fields,
                timeout_seconds=timeout_seconds,
                _preload_content=False,
                # no event for the whole watch is normal: the read timeout outlasts it
                _request_timeout=(self._timeout, timeout_seconds + self._timeout),
            )
            try:
                for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                    if not line:
                        continue
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        if status.get("code") == 410:
                            raise WatchExpiredError(f"{what}: {status.get('message')}")
                        raise ActuationError(f"{what}: {status.get('message') or status}")
                    yield event
            finally:
                response.release_conn()
        except ApiException as exc:
            if exc.status == 410:
                raise WatchExpiredError(f"{what}: {_message(exc)}") from exc
            raise ActuationError(f"{what}: HTTP {exc.status}: {_message(exc)}") from exc
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            raise ActuationError(f"{what}: stream broken: {exc}") from exc

    def list_jobs(self, *, namespace: str, labels: str | None = None) -> list[Job]:
        """Jobs in ``namespace`` matching the label selector."""
        return list(
            self._read(
                lambda: self._batch.list_namespaced_job(
                    namespace, label_selector=labels, **self._opts()
                ),
                f"list jobs ({labels or 'all'})",
            )["items"]
        )

    def list_nodes(self, *, labels: str | None = None) -> list[Node]:
        """Nodes matching the label selector."""
        return list(
            self._read(
                lambda: self._core.list_node(label_selector=labels, **self._opts()),
                f"list nodes ({labels})",
            )["items"]
        )

    def list_pdbs(self) -> list[PodDisruptionBudget]:
        """PodDisruptionBudgets in all namespaces."""
        return list(
            self._read(
                lambda: self._policy.list_pod_disruption_budget_for_all_namespaces(**self._opts()),
                "list poddisruptionbudgets",
            )["items"]
        )

    def get_nodepool(self, name: str) -> NodePool | None:
        """The NodePool, or None if it does not exist."""
        with _nodepool_grant(name):
            return cast(
                "NodePool | None",
                self._get(
                    lambda: self._custom.get_cluster_custom_object(
                        "karpenter.sh", "v1", "nodepools", name, **self._opts()
                    ),
                    f"get nodepool {name}",
                ),
            )

    def get_cluster_role(self, name: str) -> dict[str, Any] | None:
        """The ClusterRole, or None if it does not exist (``doctor`` reads our own)."""
        return cast(
            "dict[str, Any] | None",
            self._get(
                lambda: self._rbac.read_cluster_role(name, **self._opts()),
                f"get clusterrole {name}",
            ),
        )

    def list_nodepools(self) -> list[NodePool]:
        """Every NodePool (attribution needs the others' weights and requirements too)."""
        found = self._read(
            lambda: self._custom.list_cluster_custom_object(
                "karpenter.sh", "v1", "nodepools", **self._opts()
            ),
            "list nodepools",
        )
        return list(found["items"])

    def list_nodepool_names(self, *, annotated: str) -> list[str]:
        """Names of the NodePools that carry the annotation ``annotated``."""
        return [
            str(n["metadata"]["name"])
            for n in self.list_nodepools()
            if annotated in (n["metadata"].get("annotations") or {})
        ]

    def list_events(self, *, fields: str) -> list[Event]:
        """Events of every namespace matching the field selector (Karpenter's Warnings on
        cluster-scoped NodeClaims land in ``default``)."""
        return list(
            self._read(
                lambda: self._core.list_event_for_all_namespaces(
                    field_selector=fields, **self._opts()
                ),
                f"list events ({fields})",
            )["items"]
        )

    def get_priority_class(self, name: str) -> PriorityClass | None:
        """The PriorityClass, or None."""
        return cast(
            "PriorityClass | None",
            self._get(
                lambda: self._scheduling.read_priority_class(name, **self._opts()),
                f"get priorityclass {name}",
            ),
        )

    def get_config_map(self, namespace: str, name: str) -> ConfigMap | None:
        """The ConfigMap, or None."""
        return cast(
            "ConfigMap | None",
            self._get(
                lambda: self._core.read_namespaced_config_map(name, namespace, **self._opts()),
                f"get configmap {namespace}/{name}",
            ),
        )

    def get_capacity_buffer(self, namespace: str, name: str) -> CapacityBuffer | None:
        """The CapacityBuffer, or None."""
        return cast(
            "CapacityBuffer | None",
            self._get(
                lambda: self._custom.get_namespaced_custom_object(
                    *BUFFERS, namespace, "capacitybuffers", name, **self._opts()
                ),
                f"get capacitybuffer {namespace}/{name}",
            ),
        )

    def list_capacity_buffers(
        self, namespace: str, *, labels: str | None = None
    ) -> list[CapacityBuffer]:
        """CapacityBuffers in ``namespace`` (empty when the cluster does not serve them)."""
        found = self._get(
            lambda: self._custom.list_namespaced_custom_object(
                *BUFFERS, namespace, "capacitybuffers", label_selector=labels, **self._opts()
            ),
            "list capacitybuffers",
        )
        return list(found["items"]) if found else []

    def list_kueue(self, plural: str) -> tuple[str, list[Obj]] | None:
        """Kueue objects of every namespace as (version, items): v1beta2, else v1beta1; None
        when the cluster serves neither (Kueue not installed)."""
        for version in ("v1beta2", "v1beta1"):

            def call(version: str = version) -> Any:
                return self._custom.list_cluster_custom_object(
                    "kueue.x-k8s.io", version, plural, **self._opts()
                )

            found = self._get(call, f"list {plural}.kueue.x-k8s.io/{version}")
            if found is not None:
                return version, list(found["items"])
        return None

    def list_objects(
        self, group: str, version: str, plural: str, *, labels: str | None = None
    ) -> list[Obj] | None:
        """Every object of a named API group's kind in every namespace (matching ``labels``);
        None when the cluster does not serve it (404). What the notice sources read."""
        selector = {"label_selector": labels} if labels else {}
        found = self._get(
            lambda: self._custom.list_cluster_custom_object(
                group, version, plural, **selector, **self._opts()
            ),
            f"list {plural}.{group}/{version}",
        )
        return None if found is None else list(found["items"])

    def get_subresource(
        self, group: str, version: str, plural: str, name: str, subresource: str
    ) -> Obj | None:
        """A cluster-scoped object's subresource (an aggregated API's, like Kueue's visibility
        ``clusterqueues/<name>/pendingworkloads``); None when the cluster does not serve it."""
        api = self._custom.api_client

        def call() -> Any:  # the generated client's own steps, for a path it has no method of
            request = api.param_serialize(
                method="GET",
                resource_path=f"/apis/{group}/{version}/{plural}/{{name}}/{subresource}",
                path_params={"name": name},
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            opts = self._opts()
            return api._call_with_legacy_options(
                request,
                {"200": "object"},
                None,
                opts["_preload_content"],
                opts["_request_timeout"],
                True,
            )

        found: Obj | None = self._get(call, f"get {plural}.{group}/{version} {name}/{subresource}")
        return found

    def serves_capacity_buffers(self, namespace: str) -> bool:
        """Does the cluster serve CapacityBuffers? (A 404 on list means it does not.)"""
        found = self._get(
            lambda: self._custom.list_namespaced_custom_object(
                *BUFFERS, namespace, "capacitybuffers", limit=1, **self._opts()
            ),
            "list capacitybuffers",
        )
        return found is not None

    # ---- writes --------------------------------------------------------------------------
    def delete_pod(self, namespace: str, name: str) -> None:
        """Delete; a pod already gone is fine."""
        self._write(
            f"delete pod {namespace}/{name}",
            None,
            lambda: self._core.delete_namespaced_pod(
                name, namespace, grace_period_seconds=0, **self._opts()
            ),
            missing_ok=True,
        )

    def create_job(self, namespace: str, body: Job) -> None:
        self._write(
            f"create job {namespace}/{body['metadata']['name']}",
            body,
            lambda: self._batch.create_namespaced_job(namespace, body, **self._write_opts()),
        )

    def delete_job(self, namespace: str, name: str) -> None:
        """Delete a Job and (background propagation) its pods; a Job already gone is fine."""
        self._write(
            f"delete job {namespace}/{name}",
            None,
            lambda: self._batch.delete_namespaced_job(
                name,
                namespace,
                propagation_policy="Background",
                grace_period_seconds=0,
                **self._opts(),
            ),
            missing_ok=True,
        )

    def create_priority_class(self, body: PriorityClass) -> None:
        self._write(
            f"create priorityclass {body['metadata']['name']}",
            body,
            lambda: self._scheduling.create_priority_class(body, **self._write_opts()),
        )

    def patch_nodepool(self, name: str, body: Obj) -> None:
        """JSON merge patch (``None`` deletes a key); include resourceVersion to precondition."""
        with _nodepool_grant(name):
            self._write(
                f"patch nodepool {name}",
                body,
                lambda: self._custom.patch_cluster_custom_object(
                    "karpenter.sh",
                    "v1",
                    "nodepools",
                    name,
                    body,
                    _content_type=MERGE_PATCH,
                    **self._write_opts(),
                ),
            )

    def create_capacity_buffer(self, namespace: str, body: CapacityBuffer) -> None:
        self._write(
            f"create capacitybuffer {namespace}/{body['metadata']['name']}",
            body,
            lambda: self._custom.create_namespaced_custom_object(
                *BUFFERS, namespace, "capacitybuffers", body, **self._write_opts()
            ),
        )

    def patch_capacity_buffer(self, namespace: str, name: str, body: Obj) -> None:
        """JSON merge patch of a CapacityBuffer."""
        self._write(
            f"patch capacitybuffer {namespace}/{name}",
            body,
            lambda: self._custom.patch_namespaced_custom_object(
                *BUFFERS,
                namespace,
                "capacitybuffers",
                name,
                body,
                _content_type=MERGE_PATCH,
                **self._write_opts(),
            ),
        )

    def delete_capacity_buffer(self, namespace: str, name: str) -> None:
        """Delete a CapacityBuffer (zero its replicas first: see CapacityBuffers.remove)."""
        self._write(
            f"delete capacitybuffer {namespace}/{name}",
            None,
            lambda: self._custom.delete_namespaced_custom_object(
                *BUFFERS, namespace, "capacitybuffers", name, **self._opts()
            ),
            missing_ok=True,
        )

    def delete_pod_template(self, namespace: str, name: str) -> None:
        self._write(
            f"delete podtemplate {namespace}/{name}",
            None,
            lambda: self._core.delete_namespaced_pod_template(name, namespace, **self._opts()),
            missing_ok=True,
        )

    def create_pod_template(self, namespace: str, body: PodTemplate) -> None:
        self._write(
            f"create podtemplate {namespace}/{body['metadata']['name']}",
            body,
            lambda: self._core.create_namespaced_pod_template(
                namespace, body, **self._write_opts()
            ),
        )

    def replace_pod_template(self, namespace: str, body: PodTemplate) -> None:
        """PUT ``body`` (carrying the ``resourceVersion`` it was read at: 409 if it changed)."""
        name = body["metadata"]["name"]
        self._write(
            f"replace podtemplate {namespace}/{name}",
            body,
            lambda: self._core.replace_namespaced_pod_template(
                name, namespace, body, **self._write_opts()
            ),
        )

    def get_pod_template(self, namespace: str, name: str) -> PodTemplate | None:
        return cast(
            "PodTemplate | None",
            self._get(
                lambda: self._core.read_namespaced_pod_template(name, namespace, **self._opts()),
                f"get podtemplate {namespace}/{name}",
            ),
        )

    def create_event(self, namespace: str, body: Event) -> None:
        self._write(
            f"create event {namespace}/{body['metadata']['name']}",
            body,
            lambda: self._core.create_namespaced_event(namespace, body, **self._write_opts()),
        )

    def create_config_map(self, namespace: str, body: ConfigMap) -> None:
        self._write(
            f"create configmap {namespace}/{body['metadata']['name']}",
            body,
            lambda: self._core.create_namespaced_config_map(namespace, body, **self._write_opts()),
        )

    def replace_config_map(self, namespace: str, body: ConfigMap) -> None:
        self._write(
            f"replace configmap {namespace}/{body['metadata']['name']}",
            body,
            lambda: self._core.replace_namespaced_config_map(
                body["metadata"]["name"], namespace, body, **self._write_opts()
            ),
        )

    def put_config_map(self, namespace: str, body: ConfigMap, *, current: ConfigMap | None) -> None:
        """Create ``body``, or replace ``current`` with it (its resourceVersion: a concurrent
        change is a 409)."""
        if current is None:
            self.create_config_map(namespace, body)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.replace_config_map(namespace, body)

    def get_lease(self, namespace: str, name: str) -> Lease | None:
        """The Lease, or None."""
        return cast(
            "Lease | None",
            self._get(
                lambda: self._coordination.read_namespaced_lease(name, namespace, **self._opts()),
                f"get lease {namespace}/{name}",
            ),
        )

    def create_lease(self, namespace: str, body: Lease) -> None:
        """Create a Lease (409 ConflictError if another replica was faster).

        Leader election writes even in dry-run: it decides who may *act*, and a dry-run
        replica acts on nothing anyway.
        """
        self._retrying(
            lambda: self._coordination.create_namespaced_lease(
                namespace, body, **self._write_opts()
            ),
            f"create lease {namespace}/{body['metadata']['name']}",
        )

    def replace_lease(self, namespace: str, body: Lease) -> None:
        """Replace a Lease; its resourceVersion makes a concurrent change a 409."""
        self._retrying(
            lambda: self._coordination.replace_namespaced_lease(
                body["metadata"]["name"], namespace, body, **self._write_opts()
            ),
            f"replace lease {namespace}/{body['metadata']['name']}",
        )

    @contextmanager
    def within(self, seconds: float) -> Iterator[None]:
        """Every request made inside (on this thread) ends within ``seconds`` from now: its
        timeout is cut to what is left, and no attempt or retry starts past it."""
        before = getattr(self._local, "deadline", None)
        ends = time.monotonic() + seconds
        self._local.deadline = ends if before is None else min(before, ends)
        try:
            yield
        finally:
            self._local.deadline = before

    # ---- plumbing ------------------------------------------------------------------------
    def _left(self) -> float | None:
        """Seconds left before this thread's ``within`` deadline (None: no deadline)."""
        deadline = getattr(self._local, "deadline", None)
        return None if deadline is None else deadline - time.monotonic()

    def _opts(self) -> dict[str, Any]:
        timeout = getattr(self._local, "timeout", None) or self._timeout
        left = self._left()
        if left is not None:
            timeout = max(0.05, min(timeout, left))
        return {"_preload_content": False, "_request_timeout": timeout}

    def _write_opts(self) -> dict[str, Any]:
        """Every create, patch and replace names us as the field manager (GitOps recipe)."""
        return {**self._opts(), "field_manager": lbl.FIELD_MANAGER}

    def _get(self, call: Callable[[], Any], what: str) -> Any:
        """The object as JSON (typed by the caller's return type), or None on 404."""
        try:
            return self._read(call, what)
        except ActuationError as exc:
            if isinstance(exc.__cause__, ApiException) and exc.__cause__.status == 404:
                return None
            raise

    def _read(self, call: Callable[[], Any], what: str) -> Any:
        """The response as JSON (typed by the caller's return type)."""
        response = self._retrying(call, what)
        return json.loads(response.data)

    def _write(
        self,
        what: str,
        body: Mapping[str, object] | None,
        call: Callable[[], Any],
        *,
        missing_ok: bool = False,
    ) -> None:
        if self.dry_run:
            log.info("dry-run: would %s %s", what, json.dumps(body, sort_keys=True) if body else "")
            return
        log.info("%s %s", what, json.dumps(body, sort_keys=True) if body else "")
        try:
            self._retrying(call, what, guarded=True)
        except ActuationError as exc:
            if (
                missing_ok
                and isinstance(exc.__cause__, ApiException)
                and exc.__cause__.status == 404
            ):
                return
            raise

    def _retrying(self, call: Callable[[], Any], what: str, *, guarded: bool = False) -> Any:
        for attempt in range(self._retries + 1):
            left = self._left()
            if left is not None and left <= 0:
                raise ActuationError(f"{what}: not sent: past its deadline")
            try:
                if guarded and self.guard is not None:
                    self._local.timeout = self._guarded_timeout(what)
                return call()
            except ApiException as exc:
                if exc.status == 409:
                    raise ConflictError(f"{what}: conflict: {_message(exc)}") from exc
                if exc.status in _RETRYABLE and self._may_retry(attempt):
                    continue
                raise ActuationError(f"{what}: HTTP {exc.status}: {_message(exc)}") from exc
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if self._may_retry(attempt):
                    continue
                raise ActuationError(f"{what}: API server unreachable: {exc}") from exc
            finally:
                self._local.timeout = None
        raise AssertionError("unreachable")

    def _may_retry(self, attempt: int) -> bool:
        """Whether attempt ``attempt`` (from 0) may be followed by another, after its backoff:
        not past the retries, nor past this thread's deadline."""
        pause = self._backoff * 2**attempt
        left = self._left()
        if attempt >= self._retries or (left is not None and left <= pause):
            return False
        time.sleep(pause)
        return True

    def _guarded_timeout(self, what: str) -> float:
        """The request timeout that ends inside our leadership, or ``NotLeaderError``."""
        assert self.guard is not None
        remaining = self.guard()
        if remaining < MIN_WRITE_SECONDS:
            raise NotLeaderError(f"{what}: not sent, this replica is not (or no longer) the leader")
        return min(self._timeout, remaining - MIN_WRITE_SECONDS / 2)


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except (ValueError, AttributeError):
        return str(exc.reason)


NODEPOOL_GRANT = "forecaster-nodepools"
"""The daemon's ClusterRole that names its pools (``forecaster rbac``, the chart's ``pools``)."""


class NodePoolForbiddenError(ActuationError):
    """403 on one NodePool: our grant does not name it. That pool fails alone (the others'
    NodePools answer), unlike an API server that fails every read."""


@contextmanager
def _nodepool_grant(name: str) -> Iterator[None]:
    """A 403 on one NodePool says which grant lacks it (that pool fails alone)."""
    try:
        yield
    except ActuationError as exc:
        cause = exc.__cause__
        if isinstance(cause, ApiException) and cause.status == 403:
            raise NodePoolForbiddenError(
                f"{exc} - ClusterRole {NODEPOOL_GRANT} does not name NodePool {name}:"
                " `forecaster doctor` says how to grant it"
            ) from cause
        raise
