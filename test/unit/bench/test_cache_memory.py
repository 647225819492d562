"""bench.cache_memory: what the pod informers' transform saves per cached pod."""

from __future__ import annotations

from bench import cache_memory


def test_slim_pods_take_less_than_a_third_of_the_decoded_pods_heap() -> None:
    result = cache_memory.run(pods=40)
    per_pod = result["bytes_per_pod"]
    assert result["pods"] == 40
    assert set(per_pod) == {"as decoded", "managedFields dropped", "slim"}
    assert 0 < per_pod["slim"] < per_pod["managedFields dropped"] < per_pod["as decoded"]
    assert per_pod["slim"] * 3 < per_pod["as decoded"]
