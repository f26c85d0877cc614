"""GPU quantities are read as the API server reads ``resource.Quantity``.

Cases: plain, decimal-suffixed, binary-suffixed and exponent forms are the counts they are
(``1Ki`` 1024, ``2T`` 2e12, ``1e3`` 1000), fractions round down, JSON numbers and surrounding
blanks are accepted, counts past int64 read as ``MAX_UNITS``; anything else - negative, empty,
not a quantity, not a string or number - is ``MalformedObjectError``. A pod's request counts its
containers, its sidecars, and its largest other init container if that is more. A count past
one node's is ``UnplaceableError``.
"""

from __future__ import annotations

from typing import Any

import pytest

from forecaster.actuators.quantities import (
    MAX_UNITS,
    MalformedObjectError,
    UnplaceableError,
    fits_one_node,
    gpu_quantity,
    pod_gpus,
)

GPU = "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("written", "units"),
    [
        ("8", 8),
        (8, 8),
        (8.0, 8),
        (" 4 ", 4),
        ("+2", 2),
        ("1k", 1000),
        ("2M", 2_000_000),
        ("1G", 10**9),
        ("2T", 2 * 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1Ki", 1024),
        ("1Mi", 1024**2),
        ("1Gi", 1024**3),
        ("1Ti", 1024**4),
        ("1Pi", 1024**5),
        ("2Ei", 2 * 1024**6),
        ("1e3", 1000),
        ("1E3", 1000),
        ("2e+2", 200),
        ("1e-3", 0),
        ("500m", 0),
        ("1500m", 1),
        ("1.5", 1),
        (".5", 0),
        ("3.", 3),
        ("0", 0),
        ("-0", 0),
        ("1000000u", 1),
        ("1000000000n", 1),
        ("1e999999", MAX_UNITS),
        ("9" * 40, MAX_UNITS),
    ],
)
def test_a_quantity_is_the_count_the_api_server_reads(written: Any, units: int) -> None:
    assert gpu_quantity(written) == units


@pytest.mark.parametrize(
    "written",
    [
        "-1",
        "-1Ki",
        "",
        " ",
        "lots",
        "1K",
        "1ki",
        "1Kb",
        "e3",
        "1e",
        "--1",
        "1.2.3",
        "0x10",
        "NaN",
        "Infinity",
        "1_000",
        "9" * 70,
        None,
        True,
        False,
        [1],
        {"a": 1},
        float("nan"),
        float("inf"),
        -2,
    ],
)
def test_anything_else_is_malformed(written: Any) -> None:
    with pytest.raises(MalformedObjectError):
        gpu_quantity(written)


def container(gpus: str | None, **more: Any) -> dict[str, Any]:
    resources = {"requests": {GPU: gpus}, "limits": {GPU: gpus}} if gpus else {}
    return {"name": "c", "image": "i", "resources": resources, **more}


def test_a_pod_asks_its_containers_and_sidecars_or_its_largest_init_container() -> None:
    pod: Any = {"spec": {"containers": [container("2"), container("1")]}}
    assert pod_gpus(pod) == 3
    pod["spec"]["initContainers"] = [container("8"), container(None)]
    assert pod_gpus(pod) == 8  # an init container runs alone, before the others
    pod["spec"]["initContainers"] = [container("2", restartPolicy="Always"), container("4")]
    assert pod_gpus(pod) == 5  # a sidecar runs beside them


def test_more_per_pod_than_one_node_holds_is_unplaceable() -> None:
    assert fits_one_node(8, node_units=8, what="a pod", pool="p") == 8
    assert fits_one_node(10**6, node_units=None, what="a pod", pool="p") == 10**6
    with pytest.raises(UnplaceableError, match="more than one node of pool p holds"):
        fits_one_node(9, node_units=8, what="a pod", pool="p")
