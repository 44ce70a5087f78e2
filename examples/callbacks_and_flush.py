"""Fire-and-continue sends: ``python -m examples.callbacks_and_flush``.

``send_async`` returns at once; exactly one of its callbacks runs, exactly once (plain
functions: an ``async def`` is refused at the call). ``flush()`` waits for every send begun
before it, and on asyncio the returned futures work with ``asyncio.wait`` and friends.
"""

from __future__ import annotations

import asyncio

from producer import Message, Producer, SendResult
from producer.errors import ProducerError
from producer.testing import DevCluster, FaultSpec


async def main() -> None:
    ok: list[SendResult] = []
    failed: list[ProducerError] = []
    cluster = DevCluster(brokers=2, topics={"Clicks": 4})
    async with cluster, Producer("clicks", cluster.namesrv_addr) as producer:
        for i in range(500):
            click = Message("Clicks", b"click %d" % i)
            producer.send_async(click, on_success=ok.append, on_exception=failed.append)
        await producer.flush()
        print(f"flush: {len(ok)} stored, {len(failed)} failed")

        await cluster.set_fault("broker-a", FaultSpec(down=True))  # sends go to broker-b
        futures = [producer.send_async(Message("Clicks", b"more")) for _ in range(50)]
        done, _ = await asyncio.wait(futures)
        brokers = {f.result().queue.broker_name for f in done}
        print(f"asyncio.wait: {len(done)} done, all on {sorted(brokers)}")
    print(f"OK: {len(ok)} callbacks, {len(failed)} errors, {len(done)} futures")


if __name__ == "__main__":
    asyncio.run(main())
