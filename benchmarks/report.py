"""Markdown tables for the README from the benchmarks' ``result.json`` files.

``python -m benchmarks.report`` reads ``benchmarks/results/{throughput,faults,memory}/``
(whichever exist) and prints each as a Markdown table with the command, commit and date
that produced it, so every figure in the README can be traced to a run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks._common import RESULTS_ROOT


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _origin(doc: dict[str, Any]) -> str:
    machine = doc["machine"]
    return (
        f"`{doc['command']}` - {doc['timestamp'][:16].replace('T', ' ')} UTC, commit "
        f"`{machine.get('git')}`, {machine['cpus']} x {machine['cpu_model']}, {machine['python']}"
    )


def _targets(doc: dict[str, Any]) -> list[str]:
    lines = ["", "| target | measured | met |", "|---|---|---|"]
    for t in doc["targets"]:
        value = "-" if t["value"] is None else f"{t['value']:.3g}"
        note = f" ({t['note']})" if t["note"] else ""
        met = "yes" if t["met"] else "**no**"
        lines.append(f"| {t['name']} {t['op']} {t['threshold']:g}{note} | {value} | {met} |")
    return lines


_SIDES = (("sdk", "SDK"), ("sdk_unbatched", "SDK, batching off"), ("blaster", "blaster"))


def throughput(doc: dict[str, Any]) -> list[str]:
    lines = [
        _origin(doc),
        "",
        "| mode | side | msg/s | / blaster | p50 / p99 ms | client CPU | client us/msg "
        "| CPU / blaster | broker CPU |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, r in doc["results"]["modes"].items():
        for side, label in _SIDES:
            if f"{side}_msgs_per_s" not in r:
                continue
            lines.append(
                f"| {name} | {label} | {_f(r[f'{side}_msgs_per_s'], 0)} "
                f"| {_f(r.get(f'{side}_ratio', 1.0), 3)} "
                f"| {_f(r[f'{side}_p50_ms'], 3)} / {_f(r[f'{side}_p99_ms'], 3)} "
                f"| {_f(r[f'{side}_client_cpu'], 2)} | {_f(r[f'{side}_cpu_us_per_msg'], 1)} "
                f"| {_f(r.get(f'{side}_cpu_ratio', 1.0), 2)} "
                f"| {_f(r[f'{side}_server_cpu'], 2)} |"
            )
    return lines + _targets(doc)


def _cell_figure(row: dict[str, Any], figure: str, digits: int = 1, scale: float = 1.0) -> str:
    item = row[figure]
    if item["median"] is None:
        return "-"
    text = f"{scale * item['median']:,.{digits}f}"
    if len(item["values"]) > 1:
        low, high = item["spread"]
        text += f" ({scale * low:,.{digits}f}-{scale * high:,.{digits}f})"
    return text


def faults(doc: dict[str, Any]) -> list[str]:
    results = doc["results"]
    faulty = results["faulty_broker"]
    lines = [_origin(doc), ""]
    for label, cell in results["cells"].items():
        loops = f", {cell['loops']} loops" if cell.get("loops") else ""
        rounds = next(iter(next(iter(cell["scenarios"].values()))["strategies"].values()))
        lines += [
            f"**{cell['rate']:,.0f} msg/s, {cell['load']}{loops}** ({label}; median of "
            f"{rounds['rounds']} rounds, (min-max))",
            "",
            f"| scenario | strategy | success % | p50 ms | p99 ms | p999 ms "
            f"| {faulty} share, worst 1 s from 1 s in | retries / msg | client CPU us / msg |",
            "|---|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for name, scenario in cell["scenarios"].items():
            for strategy, r in scenario["strategies"].items():
                lines.append(
                    f"| {name} | {strategy} | {_cell_figure(r, 'success_rate', 2, 100.0)} "
                    f"| {_cell_figure(r, 'p50_ms')} | {_cell_figure(r, 'p99_ms')} "
                    f"| {_cell_figure(r, 'p999_ms')} "
                    f"| {_cell_figure(r, 'focus_share_max', 2, 100.0)}% "
                    f"| {_cell_figure(r, 'retries_per_msg', 3)} "
                    f"| {_cell_figure(r, 'client_cpu_us_per_msg', 0)} |"
                )
        lines.append("")
    if results.get("throughput"):
        lines += [
            "| strategy | healthy closed-loop msg/s | client CPU us / msg |",
            "|---|--:|--:|",
        ]
        for strategy, r in results["throughput"].items():
            lines.append(
                f"| {strategy} | {_cell_figure(r, 'msgs_per_s', 0)} "
                f"| {_cell_figure(r, 'client_cpu_us_per_msg')} |"
            )
    return lines + _targets(doc)


def memory(doc: dict[str, Any]) -> list[str]:
    g = doc["results"]["growth"]
    rss_low, rss_high = g.get("rss_mib_range", g["rss_mib"])
    traced = "off"
    if g["traced_growth"] is not None:
        low, high = g.get("traced_mib_range", g["traced_mib"])
        traced = f"{100 * g['traced_growth']:+.2f}% ({low}-{high} MiB)"
    lines = [
        _origin(doc),
        "",
        "| sends | RSS growth after warm-up | traced growth | tasks | connections "
        "| pending at pauses | in_flight at pauses |",
        "|--:|--:|--:|--:|--:|--:|--:|",
        f"| {g['to_sends']:,} | {100 * g['rss_growth']:+.2f}% ({rss_low}-{rss_high} MiB) "
        f"| {traced} | {g['tasks_delta']:+d} "
        f"| {g['connections_delta']:+d} | {g['max_pending_at_pause']} "
        f"| {g['max_in_flight_at_pause']} |",
    ]
    return lines + _targets(doc)


RENDERERS = {"throughput": throughput, "faults": faults, "memory": memory}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS_ROOT, help="results folder")
    args = parser.parse_args(argv)
    for folder in sorted(args.results.iterdir()) if args.results.is_dir() else []:
        path = folder / "result.json"
        if not path.is_file():
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        render = RENDERERS.get(doc.get("benchmark", ""))
        if render is None:
            continue
        print(f"### {folder.name}\n")
        print("\n".join(render(doc)))
        plots = ", ".join(f"`{folder.name}/{p}`" for p in doc["plots"])
        print(f"\nPlots: {plots}\n" if plots else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
