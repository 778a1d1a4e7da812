"""``--plot DIR``: once the run ends, ``index.html`` and ``summary.md`` list every checked function,
its picture and what the picture says (from the JSON each worker wrote beside its PNG).

Runs in the parent process: no TensorFlow, no matplotlib. Only this run's pictures are listed (a
JSON older than the run's start is a leftover of an earlier run into the same folder).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

EXPLAINED = (
    "Each picture follows a line through the inputs the function was checked with: x(t) = x0 + t·v "
    "(for one scalar input, the input itself). The middle panel is the directional derivative of "
    "⟨y, u⟩ along it, as the custom gradient gives it and as automatic differentiation of the forward's "
    "own operations gives it (or, where those have no gradient, a central difference of the forward). "
    "Red bands mark where they disagree beyond the tolerance shown in the bottom panel; points where "
    "the forward has a kink or is not finite are not compared. Straight-through estimators and other "
    "surrogate gradients disagree by design."
)


def load(folder: str, since: float) -> list[dict[str, Any]]:
    records = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            if path.stat().st_mtime < since:
                continue
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and "qualname" in record:
            records.append(record)
    return records


def write_summary(folder: str, entries: Iterable[Any], since: float) -> Path | None:
    """Write both summaries for this run's pictures; the HTML one's path (None: nothing checked)."""
    records = load(folder, since)
    rows = list(records)
    named = {(str(r.get("module")), name) for r in records for name in (r["qualname"], r.get("location"))}
    for entry in entries:  # functions no picture was attempted for: say why
        module = Path(entry.path).stem
        if (module, entry.qualname) not in named:
            why = "no valid inputs were found" if entry.status == "no-inputs" else f"the check ended: {entry.status}"
            rows.append({"module": module, "qualname": entry.qualname, "image": None, "note": f"not drawn: {why}"})
    if not rows:
        return None
    rows.sort(key=lambda r: (str(r.get("module")), str(r["qualname"])))
    out = Path(folder)
    (out / "summary.md").write_text(_markdown(rows), encoding="utf-8")
    page = out / "index.html"
    page.write_text(_html(rows), encoding="utf-8")
    return page


def _verdict(r: dict[str, Any]) -> str:
    if not r.get("image"):
        return str(r.get("note", "not drawn"))
    if r.get("verdict") == "agrees":
        return f"agrees with {r['reference']}"
    text = f"disagrees with {r['reference']} on {float(r['share']):.0%} of the line"
    if r.get("max_difference"):
        text += f" (largest difference {float(r['max_difference']):.3g} at {r['axis']} = {float(r['at']):.3g})"
    if r.get("nonfinite"):
        text += f"; NaN/Inf at {r['nonfinite']} points"
    return text


def _name(r: dict[str, Any]) -> str:
    return f"{r.get('module')}:{r['qualname']}"


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["# runtime-check --plot", "", EXPLAINED, "", "| function | custom gradient | checked inputs |",
             "|---|---|---|"]
    for r in rows:
        name = f"[`{_name(r)}`]({r['image']})" if r.get("image") else f"`{_name(r)}`"
        lines.append(f"| {name} | {_verdict(r)} | {r.get('inputs', '')} |")
    lines.append("")
    for r in rows:
        if r.get("image"):
            lines += [f"## {_name(r)}", "", _verdict(r), "", f"![{_name(r)}]({r['image']})", ""]
    return "\n".join(lines)


def _html(rows: list[dict[str, Any]]) -> str:
    def cls(r: dict[str, Any]) -> str:
        return "none" if not r.get("image") else "ok" if r.get("verdict") == "agrees" else "bad"

    table = "\n".join(
        f'<tr><td><a href="#{_anchor(r)}">{html.escape(_name(r))}</a></td>'
        f'<td class="{cls(r)}">{html.escape(_verdict(r))}</td><td>{html.escape(str(r.get("inputs", "")))}</td></tr>'
        if r.get("image") else
        f'<tr><td>{html.escape(_name(r))}</td><td class="none">{html.escape(_verdict(r))}</td>'
        f'<td>{html.escape(str(r.get("inputs", "")))}</td></tr>'
        for r in rows)
    figures = "\n".join(
        f'<section id="{_anchor(r)}"><h2>{html.escape(_name(r))}</h2><p class="{cls(r)}">{html.escape(_verdict(r))}</p>'
        f'<img src="{html.escape(r["image"])}" alt="{html.escape(_name(r))}"></section>'
        for r in rows if r.get("image"))
    bad = sum(1 for r in rows if cls(r) == "bad")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>runtime-check --plot</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ border-bottom: 1px solid #ddd; padding: .35rem .5rem;
text-align: left; vertical-align: top; font-size: .92rem; }}
.bad {{ color: #b00020; }} .ok {{ color: #1b7f3b; }} .none {{ color: #666; }} img {{ max-width: 100%; }}
section {{ margin-top: 2rem; }}
</style></head><body>
<h1>runtime-check --plot</h1>
<p>{len(rows)} function(s); {bad} with a custom gradient that disagrees somewhere on its line.</p>
<p>{html.escape(EXPLAINED)}</p>
<table><tr><th>function</th><th>custom gradient</th><th>checked inputs</th></tr>
{table}
</table>
{figures}
</body></html>
"""


def _anchor(r: dict[str, Any]) -> str:
    return "".join(c if c.isalnum() else "-" for c in _name(r))


