"""The ``rocketmq_cluster`` fixture, run inside pytester, and the thread runner behind it."""

from __future__ import annotations

import socket

import pytest

from producer.testing import DevClusterThread, FaultSpec
from producer.testing._cluster import parse_topics

PLUGIN = ["-p", "producer.testing.pytest_plugin", "-p", "no:cacheprovider"]


@pytest.fixture(autouse=True)
def _no_plugin_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    # Inner runs load only the plugins they name: faster, and the entry point is not
    # needed to be installed for the plugin to work with ``-p``.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def test_fixture_in_sync_tests_with_marker_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        rocketmq_cluster_brokers = 2
        rocketmq_cluster_topics = Orders:4 Payments:2
        """
    )
    pytester.makepyfile(
        """
        import socket

        import pytest

        from producer.testing import FaultSpec


        def connect(addr):
            host, port = addr.rsplit(":", 1)
            socket.create_connection((host, int(port)), timeout=5).close()


        def test_defaults_from_ini(rocketmq_cluster):
            assert rocketmq_cluster.broker_names == ["broker-a", "broker-b"]
            connect(rocketmq_cluster.namesrv_addr)
            connect(rocketmq_cluster.broker_addr("broker-b"))
            assert rocketmq_cluster.message_count("Orders") == 0


        @pytest.mark.rocketmq_cluster(brokers=1, topics={"X": 1}, auto_create_topic=False)
        def test_marker_wins(rocketmq_cluster):
            assert rocketmq_cluster.broker_names == ["broker-a"]


        def test_fault_control(rocketmq_cluster):
            rocketmq_cluster.set_fault("broker-a", FaultSpec(down=True))
            with pytest.raises(ConnectionRefusedError):
                connect(rocketmq_cluster.broker_addr("broker-a"))
            rocketmq_cluster.clear_fault("broker-a")
            connect(rocketmq_cluster.broker_addr("broker-a"))
            assert rocketmq_cluster.fault("broker-a").is_healthy


        def test_each_test_gets_a_fresh_cluster(rocketmq_cluster):
            assert rocketmq_cluster.fault("broker-a").is_healthy
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN, "-v")
    result.assert_outcomes(passed=4)


def test_fixture_in_async_tests_on_anyio(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import anyio
        import pytest

        pytestmark = pytest.mark.anyio


        @pytest.fixture(params=["asyncio", "trio"])
        def anyio_backend(request):
            return request.param


        async def test_connects(rocketmq_cluster):
            host, port = rocketmq_cluster.namesrv_addr.rsplit(":", 1)
            stream = await anyio.connect_tcp(host, int(port))
            await stream.aclose()
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "anyio")
    result.assert_outcomes(passed=2)


def test_marker_with_positional_arguments_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.rocketmq_cluster(3)
        def test_it(rocketmq_cluster):
            pass
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*keyword arguments only*"])


def test_thread_runner_is_usable_without_an_event_loop() -> None:
    with DevClusterThread(brokers=2, topics={"Orders": 2}, http_port=0) as cluster:
        host, port = cluster.broker_addr("broker-a").rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=5).close()
        cluster.add_topic("Later", 1, brokers=["broker-b"])
        cluster.set_namesrv_down(True)
        cluster.set_namesrv_down(False)
        cluster.set_fault("broker-b", FaultSpec(latency_ms=1))
        assert cluster.broker_status("broker-b")["fault"] == {"latency_ms": 1}
        assert cluster.messages() == [] and cluster.unique_msg_ids("Orders") == set()
        assert cluster.clients("broker-a") == {} and cluster.http_url is not None
        assert "running" in repr(cluster)
    assert "stopped" in repr(cluster)
    cluster.close()  # idempotent


@pytest.mark.parametrize(
    ("text", "topics"),
    [("", {}), ("A:1  B:16", {"A": 1, "B": 16}), (["A:2", "B:3 C:4"], {"A": 2, "B": 3, "C": 4})],
)
def test_parse_topics(text: str | list[str], topics: dict[str, int]) -> None:
    assert parse_topics(text) == topics


@pytest.mark.parametrize("bad", ["A", "A:", ":3", "A:0", "A:x"])
def test_parse_topics_refuses_bad_items(bad: str) -> None:
    with pytest.raises(ValueError, match="NAME:QUEUES"):
        parse_topics(bad)


def test_thread_runner_start_failure_raises_and_leaves_no_thread() -> None:
    import threading

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        threads = threading.active_count()
        with pytest.raises(OSError, match="in use"):
            DevClusterThread(namesrv_port=taken.getsockname()[1]).start()
        assert threading.active_count() == threads


def test_loading_the_plugin_imports_no_cluster_until_its_fixture_is_used(
    pytester: pytest.Pytester,
) -> None:
    """The plugin loads on every user's pytest start (an entry point): the dev cluster's
    modules are imported only when a test asks for the fixture."""
    pytester.makepyfile(
        """
        import sys

        CLUSTER = "producer.testing._cluster"


        def test_1_without_the_fixture():
            assert CLUSTER not in sys.modules


        def test_2_with_the_fixture(rocketmq_cluster):
            assert CLUSTER in sys.modules
            assert rocketmq_cluster.broker_names
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=2)
