"""An error reads as prose: a name server's remark is folded into one sentence of the
NoRouteError (issue 34: it read "...for further details.. Create the topic")."""

from __future__ import annotations

import re

import pytest

from producer import Message
from producer.errors import NoRouteError
from producer.testing import DevClusterThread
from tests.producer.conftest import make_producer

pytestmark = pytest.mark.anyio


async def test_no_route_error_is_one_line_of_sentences(cluster: DevClusterThread) -> None:
    async with make_producer(cluster, auto_create_topic=False) as p:
        with pytest.raises(NoRouteError) as info:
            await p.send(Message("NoSuchTopic", b"x"))
    text = str(info.value)
    assert "No topic route info in name server" in text  # the name server's own words
    assert not re.search(r"[^.]\.\.[^.]", text) and "\n" not in text, text  # "{...}" is fine
    assert "for further details. Create the topic:" in text
