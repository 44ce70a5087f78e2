"""A bare ``pip install`` (no extras) sends: the SDK, the dev cluster without its HTTP
control, and ``python -m producer --help`` need neither rich, aiohttp, Spark, lz4 nor
zstandard. It reads zlib bodies; LZ4 and zstd ones name the ``[compression]`` extra."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]

WITHOUT_EXTRAS = textwrap.dedent(
    """
    import sys

    class RefuseExtras:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in (
                "rich", "aiohttp", "pyspark", "pyarrow", "pandas", "lz4", "zstandard"
            ):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, RefuseExtras())
    """
)

SEND_ONE = WITHOUT_EXTRAS + textwrap.dedent(
    """
    import anyio
    import latency_fault, producer.errors
    from producer import Message, Producer
    from producer.testing import DevCluster

    async def main():
        async with DevCluster(brokers=1, topics={"T": 2}) as cluster:
            async with Producer("g", cluster.namesrv_addr) as p:
                result = await p.send(Message("T", b"bare"))
        print(result.status.value)

    anyio.run(main)
    assert not {"rich", "aiohttp", "pyspark", "pyarrow", "lz4", "zstandard"} & set(sys.modules)
    """
)


def run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_sdk_and_the_dev_cluster_send_without_extras() -> None:
    done = run(SEND_ONE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "SEND_OK"


def test_the_cli_helps_without_rich_and_names_the_extra_for_the_demo() -> None:
    cli = WITHOUT_EXTRAS + "from producer.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    assert run(cli, "--help").returncode == 0
    demo = run(cli, "demo")
    assert demo.returncode == 2
    assert 'pip install "rocketmq-aio-producer[cli]"' in demo.stderr


def test_the_http_control_names_its_extra() -> None:
    code = WITHOUT_EXTRAS + textwrap.dedent(
        """
        import anyio
        from producer.testing import DevCluster

        async def main():
            async with DevCluster(brokers=1, http_port=0):
                pass

        try:
            anyio.run(main)
        except ImportError as exc:
            print(exc)
        """
    )
    done = run(code)
    assert 'pip install "rocketmq-aio-producer[devcluster]"' in done.stdout, done.stderr


def test_spark_names_its_extra() -> None:
    done = run(WITHOUT_EXTRAS + "import producer.spark\n")
    assert done.returncode == 1
    assert 'pip install "rocketmq-aio-producer[spark]"' in done.stderr


def test_every_library_producer_spark_imports_comes_with_the_spark_extra() -> None:
    """``render_report(png=...)`` imports matplotlib inside a function: such imports count."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = {
        re.split(r"[<>=!;\[ ]", requirement, maxsplit=1)[0].lower()
        for requirement in [*project["dependencies"], *project["optional-dependencies"]["spark"]]
    }
    imported: set[str] = set()
    for path in (ROOT / "producer" / "spark").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"producer", "latency_fault"}
    assert third_party and third_party <= installed, third_party - installed


def test_a_bare_install_reads_zlib_and_names_the_extra_for_lz4_and_zstd() -> None:
    code = WITHOUT_EXTRAS + textwrap.dedent(
        """
        import zlib
        from producer._remoting.message_codec import decompress_body
        from producer.errors import CodecUnavailableError

        for flag in (1, 769):  # as a 4.x Java producer flags zlib, and as 5.x does
            assert decompress_body(zlib.compress(b"plain"), flag) == b"plain"
        for flag in (257, 513):
            try:
                decompress_body(b"\\x04\\x22\\x4d\\x18", flag)
            except CodecUnavailableError as exc:
                print(exc)
        from producer import Producer
        try:
            Producer("g", "127.0.0.1:9876", compress_type="lz4")
        except CodecUnavailableError as exc:
            print(exc)
        """
    )
    done = run(code)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stdout
    assert all('pip install "rocketmq-aio-producer[compression]"' in line for line in lines)
    assert "'lz4'" in lines[0] and "'zstandard'" in lines[1]
