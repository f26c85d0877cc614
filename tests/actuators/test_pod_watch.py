"""The pod watch against the API double's watch: the cache follows the cluster, never holds our
placeholders, wakes on new pending GPU pods only, and is not trusted out of sync.

Cases: after start the cache equals a fresh list of the live pods not ours, through creates,
scheduling, a pod finishing (it leaves the field selector: DELETED) and a delete; ``live_pods``
is then that cache plus a fresh list of ours, identical to one list of all; the observer sends
no unselected cluster-wide pod list, and from the slimmed cache (pods as served: managedFields,
environment, volumes, statuses) observes exactly what the list gives; ``on_arrival`` fires for
a new pending GPU pod, not for a CPU pod, not for updates of a known pod; a dropped stream
resumes from its version, a compacted one (410) relists; nothing is served between a failure
and the next list; a watch silent past ``stale_after_seconds`` is not trusted; a failing list
is retried with backoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.observe.observer import observe
from forecaster.actuators.observe.pod_watch import LIVE_PODS, NOT_OURS, PodWatch, live_pods
from forecaster.actuators.prewarm.placeholders import Placeholders, PlaceholderSpec
from forecaster.errors import ActuationError, WatchExpiredError
from forecaster.testing.fakes import POOL, T0
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import dressed

Names = set[tuple[str, str, str]]


def names(pods: list[dict[str, object]] | None) -> Names:
    assert pods is not None
    return {
        (p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["resourceVersion"])  # type: ignore[index]
        for p in pods
    }


def eventually(check: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)


@pytest.fixture
def arrivals() -> list[str]:
    return []


@pytest.fixture
def watch(kube: Kube, arrivals: list[str]) -> Iterator[PodWatch]:
    watched = PodWatch(kube, on_arrival=arrivals.append, watch_seconds=1)
    yield watched
    watched.stop()


def others(kube: Kube) -> Names:
    return names(kube.list_pods(labels=NOT_OURS, fields=LIVE_PODS))


def in_sync(watch: PodWatch, kube: Kube) -> Callable[[], bool]:
    return lambda: watch.pods() is not None and names(watch.pods()) == others(kube)


def placeholder(kube: Kube) -> None:
    ours = Placeholders(kube, namespace="forecaster", priority_class="forecaster-placeholder")
    ours.verify_priority_class = lambda: None  # type: ignore[method-assign]
    ours.apply(PlaceholderSpec(pool=POOL, gpus=8), target=1, now=T0)


def finish(api: KubeApiDouble, name: str) -> None:
    pod = api.store.get(("pods", "ml", name))
    pod["status"] = {**pod.get("status", {}), "phase": "Succeeded"}
    api.store.replace(("pods", "ml", name), pod)


def test_the_cache_follows_the_cluster_and_never_holds_ours(
    api: KubeApiDouble, kube: Kube, busy_cluster: ClusterSim, watch: PodWatch
) -> None:
    assert watch.pods() is None  # not listed yet: callers list
    watch.start()
    eventually(in_sync(watch, kube))
    busy_cluster.submit("new", POOL, 8)
    busy_cluster.submit("other", POOL, 8, namespace="team-b")
    placeholder(kube)
    busy_cluster.step()  # scheduling, node launches, placeholders' pods from their Jobs
    eventually(in_sync(watch, kube))
    finish(api, "new")  # Succeeded: it leaves the field selector, the watch says DELETED
    api.store.delete(("pods", "team-b", "other"))
    eventually(in_sync(watch, kube))
    cached = names(watch.pods())
    assert ("ml", "new") not in {n[:2] for n in cached}
    ours = names(kube.list_pods(labels=lbl.owned_selector()))
    assert ours and not cached & ours  # our placeholders are never cached...
    assert names(live_pods(kube, watch)) == names(kube.list_pods(fields=LIVE_PODS))  # ...but read
    assert watch.relists == 1


def test_the_observer_reads_the_cache_and_lists_only_ours(
    api: KubeApiDouble, kube: Kube, busy_cluster: ClusterSim, watch: PodWatch
) -> None:
    busy_cluster.submit("waiting", POOL, 8)
    placeholder(kube)
    busy_cluster.step()
    for pod in api.objects("pods", "ml"):  # as served: the fields ``slim`` drops are there
        api.store.replace(("pods", "ml", pod["metadata"]["name"]), dressed(pod))
    listed = observe(kube, pools=[POOL], now=int(api.clock))
    watch.start()
    eventually(in_sync(watch, kube))
    before = len(api.requests)
    watched = observe(kube, pools=[POOL], now=int(api.clock), watched=watch)
    assert watched == listed  # nothing the observer reads was slimmed away
    kept = watch.pods()
    assert kept and all("managedFields" not in p["metadata"] for p in kept)
    assert all("env" not in c for p in kept for c in p["spec"]["containers"])
    pod_lists = [  # the watch's own re-connections (slow machine) are not lists
        r.query
        for r in api.requests[before:]
        if r.path == "/api/v1/pods" and "watch" not in r.query
    ]
    assert pod_lists == [
        {"labelSelector": lbl.owned_selector(), "fieldSelector": LIVE_PODS}
    ]  # only ours: the rest came from the watch


def test_new_pending_gpu_pods_wake_the_loop_and_nothing_else_does(
    api: KubeApiDouble, kube: Kube, busy_cluster: ClusterSim, watch: PodWatch, arrivals: list[str]
) -> None:
    watch.start()
    eventually(in_sync(watch, kube))
    assert arrivals == []  # the pods already there at the list are not arrivals
    busy_cluster.submit("burst-0", POOL, 4)
    eventually(lambda: arrivals == ["ml/burst-0"])
    busy_cluster.submit("slices", POOL, 2, resource="nvidia.com/mig-1g.10gb")  # MIG: wakes too
    eventually(lambda: arrivals == ["ml/burst-0", "ml/slices"])
    busy_cluster.submit("cpu", POOL, 0)
    placeholder(kube)  # ours: not even seen
    for name in ("burst-0", "cpu"):  # updates of known pods, pending GPU ones included
        pod = api.store.get(("pods", "ml", name))
        pod["metadata"]["labels"]["touched"] = "yes"
        api.store.replace(("pods", "ml", name), pod)
    busy_cluster.step()  # scheduling, node launches: more updates
    eventually(in_sync(watch, kube))
    assert arrivals == ["ml/burst-0", "ml/slices"]


def test_a_dropped_stream_resumes_and_a_compacted_one_relists(
    api: KubeApiDouble, kube: Kube, busy_cluster: ClusterSim, watch: PodWatch
) -> None:
    watch.start()
    eventually(in_sync(watch, kube))
    api.drop_watches()  # connection cut: resume from the last version, no list
    busy_cluster.submit("after-drop", POOL, 8)
    eventually(in_sync(watch, kube))
    assert watch.relists == 1
    api.faults.add("GET", r"^/api/v1/pods$", status=0, delay_seconds=0.5)  # the re-watch lags
    api.drop_watches()
    busy_cluster.submit("during-the-gap", POOL, 8)
    api.store.compact()  # ...and the change it missed is compacted away: 410, list again
    eventually(lambda: watch.relists == 2 and in_sync(watch, kube)())


def test_nothing_is_served_between_a_failure_and_the_next_list(
    api: KubeApiDouble, kube: Kube, busy_cluster: ClusterSim, watch: PodWatch
) -> None:
    watch.sync()  # listed, then one 1 s stream
    busy_cluster.submit("missed", POOL, 8)
    api.store.compact()
    with pytest.raises(WatchExpiredError):
        watch.sync()  # resuming from before the compaction: 410
    assert watch.pods() is None  # until a list succeeds, the observer lists
    api.faults.add("GET", r"^/api/v1/pods$", status=503, times=100)
    with pytest.raises(ActuationError):
        watch.sync()
    assert watch.pods() is None
    api.faults.clear()
    watch.sync()
    assert in_sync(watch, kube)()
    assert watch.relists == 2


def test_a_silent_watch_is_not_trusted(kube: Kube, busy_cluster: ClusterSim) -> None:
    now = [0.0]
    watched = PodWatch(kube, watch_seconds=2, stale_after_seconds=90, monotonic=lambda: now[0])
    watched.sync()
    assert watched.pods() is not None
    now[0] = 89.0
    assert watched.pods() is not None
    now[0] = 91.0  # no event, no bookmark for longer than the bound
    assert watched.pods() is None
    watched.sync()  # a bookmark (the double sends one per idle second) vouches again
    assert watched.pods() is not None


def test_a_failing_list_is_retried_with_backoff(
    api: KubeApiDouble, kube: Kube, busy_cluster: ClusterSim, watch: PodWatch
) -> None:
    api.faults.add("GET", r"^/api/v1/pods$", status=503, times=4)  # one failed list (3 retries)
    watch.start()
    eventually(in_sync(watch, kube), seconds=8)
    assert watch.relists == 1
