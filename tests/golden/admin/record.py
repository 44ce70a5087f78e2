"""Record the admin probes' answers from a running cluster (a real one, or the dev cluster).

    python tests/golden/admin/record.py --namesrv 127.0.0.1:9876 --out tests/golden/admin/4_9_4
    python tests/golden/admin/record.py --namesrv 127.0.0.1:29876 --v5 \
        --out tests/golden/admin/5_2_0

Each probe of :mod:`tests.golden.admin.probes` is sent in order on one connection per
server (name server, the first master); every request and answer frame is written as
``NN_name.request.bin`` / ``.response.bin`` and the session as ``frames.jsonl`` (decoded
headers, bodies as text). README.md beside this file says what was recorded and how.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from producer._remoting.frame_decoder import decode_frame  # noqa: E402
from producer._remoting.frame_encoder import encode_frame  # noqa: E402
from producer._remoting.route import quote_legacy_keys  # noqa: E402
from tests.golden.admin.probes import Probe, probes  # noqa: E402

_INT32 = struct.Struct(">i")


class Conn:
    """One blocking connection: a request out, its answer in."""

    def __init__(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)

    def exchange(self, frame: bytes) -> bytes:
        """Send ``frame``; its answer (requests the server starts, e.g. the
        NOTIFY_CONSUMER_IDS_CHANGED after a heartbeat, are skipped)."""
        self.sock.sendall(frame)
        while True:
            prefix = self._read(4)
            raw = prefix + self._read(_INT32.unpack(prefix)[0])
            if decode_frame(raw).is_response:
                return raw

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data


def first_master(namesrv: Conn, cluster_probe: Probe) -> tuple[str, str, str]:
    answer = decode_frame(namesrv.exchange(encode_frame(cluster_probe.command({}))))
    text = answer.body.decode()
    # {"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},...
    table = json.loads(_quote_int_keys(text))["brokerAddrTable"]
    name = sorted(table)[0]
    return table[name]["cluster"], name, table[name]["brokerAddrs"]["0"]


def _quote_int_keys(text: str) -> str:
    return quote_legacy_keys(text.encode()).decode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--v5", action="store_true", help="also the 5.x assignment probes")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    namesrv = Conn(args.namesrv)
    steps = probes(v5=args.v5)
    cluster, broker_name, broker_addr = first_master(namesrv, steps[0])
    broker = Conn(broker_addr)
    context = {"cluster": cluster, "broker_name": broker_name, "broker_addr": broker_addr}
    lines = []
    for number, probe in enumerate(steps, 1):
        request = probe.command(context)
        request.opaque = number
        raw_request = encode_frame(request)
        raw_answer = (namesrv if probe.target == "namesrv" else broker).exchange(raw_request)
        answer = decode_frame(raw_answer)
        probe.learn(answer, context)
        stem = f"{number:02d}_{probe.name}"
        (args.out / f"{stem}.request.bin").write_bytes(raw_request)
        (args.out / f"{stem}.response.bin").write_bytes(raw_answer)
        lines.append(
            json.dumps(
                {
                    "n": number,
                    "name": probe.name,
                    "target": probe.target,
                    "code": request.code,
                    "request_fields": request.ext_fields,
                    "answer_code": answer.code,
                    "answer_remark": answer.remark,
                    "answer_fields": answer.ext_fields,
                    "answer_body": answer.body.decode("utf-8", "replace"),
                }
            )
        )
        print(stem, answer.code, answer.remark or "", answer.body[:160])
    (args.out / "frames.jsonl").write_text("\n".join(lines) + "\n")
    (args.out / "context.json").write_text(json.dumps(context, indent=1) + "\n")


if __name__ == "__main__":
    main()
