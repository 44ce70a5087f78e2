"""Sending from synchronous code: ``python -m examples.blocking_script``.

``producer.blocking.Producer`` runs the async producer on a loop thread of its own; every
method blocks (``send_async`` returns a ``concurrent.futures.Future``) and any thread may
call it: scripts, WSGI apps, Spark executors. Here eight threads share one producer.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from producer import Message
from producer.blocking import Producer
from producer.testing import DevClusterThread


def main() -> None:
    with DevClusterThread(brokers=2, topics={"Orders": 4}) as cluster:
        with Producer("billing-script", namesrv=cluster.namesrv_addr) as producer:
            with ThreadPoolExecutor(max_workers=8) as pool:
                results = list(
                    pool.map(lambda i: producer.send(Message("Orders", b"%d" % i)), range(80))
                )
            futures = [producer.send_async(Message("Orders", b"async %d" % i)) for i in range(20)]
            producer.flush()  # every send begun so far has finished
            assert all(f.done() for f in futures)
        print(f"sent {len(results)} from 8 threads, then {len(futures)} without waiting")
        print(f"OK: the cluster stored {cluster.message_count('Orders')} messages")


if __name__ == "__main__":
    main()
