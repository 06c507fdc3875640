"""Counterexamples as pictures (issue 14 item 7): ``verify --plot DIR`` / ``verify --replay FILE --plot DIR``.

One figure per record, the picture a scheduler author puts in a bug report: a row per event, each
node a strip of its G GPUs coloured by job (stable names J0, J1, … in arrival order, as in the text
trace of :mod:`proofs_check.gpu.trace_view`), COMPASS's slots (width w★(g), eq. 3) and pool
(Definition 5) outlined, and N, Φπ, Φ★ and SIF = (Φπ − Φ★)/N (seeds/000 §3.1, eq. 1–2) beside
every row. The rows are re-derived by re-running the events (``trace_view.walk`` /
``hier_model.walk``), so a replayed record is drawn as the scheduler behaves today.

What each record kind becomes:

- flat ``trace`` (model ``policy``: COMPASS claims and the ``policy.*`` claims of any scheduler):
  as above; an event that was not applied (refused, operator failure) is a red row;
- hierarchical ``trace`` (model ``hier``, Appendix D): each 8-GPU panel a strip, labelled
  ``D<domain>.P<panel>``, multi-panel instances over whole panels, the GPU-level Φπ, Φ★, SIF
  (over the N_p = D·K panels) per row; the hierarchical canonical form keeps no stable domain or
  panel names, so each row's domains, and the panels inside each domain, are drawn in the order
  that matches the row above best (:func:`stable_order`: a reordering is not a migration and is
  not drawn as one); job names are stable;
- ``counts`` (Appendix C formula claims): one row per packing of the count vector — the exact
  Φ★ witness and, for Algorithm 2, the algorithm's own packing — GPUs coloured by demand g;
- anything else (RingStitch records, the flat-vs-hierarchical ``k1`` trace) is skipped with a
  stated reason, which the caller reports and counts.

Colours: the Okabe–Ito palette (colour-blind safe, ``proofs_check.figstyle``), one colour per job
(or demand) in order, near pairs told apart by a hatch; beyond 8 the colours repeat with another
hatch pattern, so no two jobs look alike (``CELL_STYLES``).
Written as PNG (200 dpi) with an SVG beside it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from heuristics.gpu.abs_space import POOL, SLOTTED, AbsView, NodeView
from heuristics.gpu.hier_abs import HierView, layout
from heuristics.gpu.hier_cluster import G_PANEL
from proofs_check.core.model import Undecided
from proofs_check.figstyle import OKABE_ITO, save_figure
from proofs_check.core.trace import Record
from proofs_check.gpu import policy_claims
from proofs_check.gpu.canonical import FlatState
from proofs_check.gpu.events import Event, state_from_json
from proofs_check.gpu.facts import Facts, sif_numbers
from proofs_check.gpu.flat_claims import compass_factory
from proofs_check.gpu.hier_model import HierFacts, HierModel, legal_demands
from proofs_check.gpu.hier_model import walk as hier_walk
from proofs_check.gpu.policy_model import PolicyFactory
from proofs_check.gpu.trace_view import walk

Cell = str | None  # what a GPU holds: a job name ("J3"), a demand ("g=3"), or nothing
DOMAIN_GAP = 2  # extra GPU widths between the strips of two NVLink domains


class Mark(NamedTuple):
    """An outlined run of GPUs on a strip: a COMPASS slot (``w4``) or the pool (``pool``)."""

    start: int
    width: int
    text: str


class Strip(NamedTuple):
    """One node (or panel): its GPUs left to right."""

    label: str
    cells: tuple[Cell, ...]
    marks: tuple[Mark, ...] = ()
    units: tuple[tuple[int, int], ...] = ()  # (first GPU, GPUs) of every instance, outlined
    group: int = 0  # strips of one NVLink domain share a group; groups are drawn apart


class Row(NamedTuple):
    """One event (or one packing): the cluster after it and the figures that matter."""

    event: str
    strips: tuple[Strip, ...]
    figures: str
    failure: str = ""


class Picture(NamedTuple):
    title: str
    rows: tuple[Row, ...]
    legend: str  # what the colours stand for: "job" or "demand"


class Skipped(NamedTuple):
    """A record drawn as no figure, and why (reported and counted by the caller)."""

    label: str
    reason: str


def record_label(rec: Record) -> str:
    """The record's claim as the report names it (hierarchical claims carry their K)."""
    return rec["claim"] + (f"[K={rec['K']}]" if "K" in rec else "")


def picture(rec: Record) -> Picture | Skipped:
    """The rows of one validated record (``core.trace``), or why it has no figure."""
    kind, model = rec["kind"], rec.get("model")
    if kind == "trace" and model == "policy":
        return _flat_picture(rec)
    if kind == "trace" and model == "hier":
        return _hier_picture(rec)
    if kind == "counts":
        return _counts_picture(rec)
    if kind == "trace":
        return Skipped(record_label(rec), f"a '{model}' trace compares two schedulers' decisions; it has no single "
                                          "cluster to draw (verify --replay prints it)")
    return Skipped(record_label(rec), f"a '{kind}' record is a RingStitch rack instance, not GPU nodes; "
                                      "verify --replay prints it")


# --------------------------------------------------------------------------- flat traces
def _flat_factory(rec: Record) -> tuple[PolicyFactory, str]:
    return compass_factory(rec.get("variant", "literal")), f"COMPASS {rec.get('variant', 'literal')}"


def _live_picture(rec: Record) -> Picture:
    """A policy.* trace: the real run as recorded (the scheduler's own node numbers and job ids)."""
    n = int(rec["n_nodes"])
    nodes = tuple(range(n))
    rows = tuple(_flat_row(row["event"], state_from_json(st), nodes, None, row.get("failure", ""))
                 for row, st in zip(rec["shown"], rec["states"]))
    return Picture(_title(rec, f"policy {rec.get('policy')}, N={n}"), rows, "job")


def _flat_picture(rec: Record) -> Picture:
    n = int(rec["n_nodes"])
    if policy_claims.owns(rec["claim"]):
        return _live_picture(rec)
    factory, who = _flat_factory(rec)
    events = [Event.from_json(e) for e in rec["events"]]
    try:
        steps, raised = walk(factory, n, events), False
    except Exception:  # a scheduler that raises on the last event (policy.no-stuck allows it)
        steps, raised = walk(factory, n, events[:-1]), True
    rows = [_flat_row(st.shown, st.state, st.node_names, dict(st.job_names), st.failure) for st in steps]
    if raised:  # the search's state after the raise: unchanged (stable names kept) or in its own labels
        last = state_from_json(rec["states"][-1])
        prev = steps[-1] if steps and steps[-1].state == last else None
        nodes, names = (prev.node_names, dict(prev.job_names)) if prev else (tuple(range(n)), None)
        rows.append(_flat_row(str(events[-1]), last, nodes, names, rec.get("failure") or "the scheduler raised"))
    return Picture(_title(rec, f"{who}, N={n}"), tuple(rows), "job")


def _flat_row(event: str, state: FlatState, node_names: tuple[int, ...], names: dict[int, int] | None,
              failure: str) -> Row:
    def job(j: int) -> str:
        return f"J{names[j]}" if names is not None else f"J{j}"

    order = sorted(range(len(state.nodes)), key=lambda i: node_names[i])
    strips = tuple(_abs_strip(f"node {node_names[i]}", state.nodes[i], state.capacity, job)
                   if isinstance(state, AbsView) else
                   _plain_strip(f"node {node_names[i]}", [(job(x.job), x.g) for x in state.nodes[i]], state.capacity)
                   for i in order)
    return Row(event, strips, _sif_text(Facts(state)), failure)


def _abs_strip(label: str, nd: NodeView, capacity: int, job: Any) -> Strip:
    """A COMPASS node: slots in order (anchor, fillers, vacancy) outlined with their width; a pool
    node's 1-GPU instances outlined as the pool."""
    if nd.kind == POOL:
        cells: list[Cell] = [job(j) for j in sorted(nd.pool, key=job)]
        return Strip(label, _padded(cells, capacity), (Mark(0, capacity, "pool"),), _ones(0, len(cells)))
    cells, marks, units = [], [], []
    if nd.kind == SLOTTED:
        for s in nd.slots:
            start = len(cells)
            marks.append(Mark(start, s.width, f"w{s.width}"))
            units += [(start, s.anchor_g), *_ones(start + s.anchor_g, len(s.fillers))]
            cells += [job(s.anchor_job)] * s.anchor_g + [job(f) for f in s.fillers] + [None] * s.vacancy
    return Strip(label, _padded(cells, capacity), tuple(marks), tuple(units))


def _ones(start: int, count: int) -> tuple[tuple[int, int], ...]:
    return tuple((start + i, 1) for i in range(count))


def _plain_strip(label: str, instances: Iterable[tuple[str, int]], capacity: int) -> Strip:
    """A node of a scheduler without ABS structure: its instances side by side, by job name."""
    cells: list[Cell] = []
    units = []
    for name, g in sorted(instances, key=lambda x: _natural(x[0])):
        units.append((len(cells), g))
        cells += [name] * g
    return Strip(label, _padded(cells, capacity), units=tuple(units))


def _padded(cells: list[Cell], capacity: int) -> tuple[Cell, ...]:
    return tuple(cells + [None] * (capacity - len(cells)))


def _sif_text(f: Facts) -> str:
    fig = sif_numbers(f)
    star = fig["Φ★"]
    sif = f"SIF={fig['SIF']}" if "SIF" in fig else "SIF unknown"
    return f"N={fig['N']}  Φπ={fig['Φπ']}  Φ★={star}  {sif}"


def _title(rec: Record, who: str) -> str:
    breaks = ", ".join(f"{k}={v}" for k, v in rec.get("numbers", {}).items() if k != "counts")
    return f"{record_label(rec)} — {who}" + (f"\nbreaks/reaches: {breaks}" if breaks else "")


# --------------------------------------------------------------------------- hierarchical traces
def _hier_picture(rec: Record) -> Picture:
    d, k, variant = int(rec["n_nodes"]), int(rec["K"]), rec.get("variant", "literal")
    model = HierModel(d, k, variant, legal_demands(k), 0, 0, bool(rec.get("wcc_trajectory")))
    rows = stable_order(tuple(_hier_row(st["event"], st["state"], st["names"], st["failure"])
                              for st in hier_walk(model, [Event.from_json(e) for e in rec["events"]])))
    return Picture(_title(rec, f"hierarchical COMPASS {variant}, D={d} domains × K={k} panels"), rows, "job")


def _hier_row(event: str, view: HierView, names: dict[int, int], failure: str) -> Row:
    """Each panel a strip of 8 GPUs: GPU-level instances with their slots / pool outlined as on a
    flat node, panel-level units and multi-panel spans filling whole panels (outlined ``panel``)."""
    def job(j: int) -> str:
        return f"J{names.get(j, j)}"

    hp, t = layout(view), view.topology
    span_of = {p: s.job for s in hp.spans for p in s.panels}
    strips = []
    for p in range(t.n_panels):
        label = f"D{t.domain_of(p)}.P{p - t.panels_of(t.domain_of(p)).start}"
        units = [x.job for x in hp.panels[p] if x.g == G_PANEL]
        if p in span_of or units:
            owner = span_of[p] if p in span_of else units[0]
            strip = Strip(label, (job(owner),) * G_PANEL, (Mark(0, G_PANEL, "panel"),), ((0, G_PANEL),))
        else:
            strip = _abs_strip(label, view.gpu.nodes[p], G_PANEL, job)
        strips.append(strip._replace(group=t.domain_of(p)))
    return Row(event, tuple(strips), _hier_text(HierFacts(view)), failure)


def _overlap(a: Strip, b: Strip) -> int:
    return sum(x == y and x is not None for x, y in zip(a.cells, b.cells))


def _assign(score: list[list[int]]) -> list[int]:
    """For each previous position i, the index of the current item it gets: pairs taken by
    decreasing score (greedy; ties by position, then index), the rest in their original order."""
    pairs = sorted(((-v, i, j) for i, row in enumerate(score) for j, v in enumerate(row) if v > 0))
    given: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in pairs:
        if i not in given and j not in used:
            given[i] = j
            used.add(j)
    rest = iter(j for j in range(len(score[0]) if score else 0) if j not in used)
    return [given[i] if i in given else next(rest) for i in range(len(score))] + list(rest)


def _best_match(prev: list[Strip], cur: list[Strip]) -> list[Strip]:
    """``cur`` reordered so that the strips most like ``prev``'s keep their positions."""
    return [cur[j] for j in _assign([[_overlap(p, c) for c in cur] for p in prev])] if prev else cur


def stable_order(rows: tuple[Row, ...]) -> tuple[Row, ...]:
    """Hierarchical rows with each row's domains (strip groups), and the panels inside each, in
    the order that best matches the row above; labels follow the drawn position (``D0.P1`` = the
    first domain's second panel as drawn), since the canonical state names neither."""
    out: list[Row] = []
    for row in rows:
        groups: dict[int, list[Strip]] = {}
        for st in row.strips:
            groups.setdefault(st.group, []).append(st)
        doms = list(groups.values())
        if out:
            prev: dict[int, list[Strip]] = {}
            for st in out[-1].strips:
                prev.setdefault(st.group, []).append(st)
            pd = list(prev.values())
            order = _assign([[sum(_overlap(a, b) for a in x for b in y) for y in doms] for x in pd])
            doms = [_best_match(pd[k], doms[j]) if k < len(pd) else doms[j] for k, j in enumerate(order)]
        strips = tuple(st._replace(label=f"D{d}.P{p}", group=d) for d, dom in enumerate(doms) for p, st in enumerate(dom))
        out.append(row._replace(strips=strips))
    return tuple(out)


def _hier_text(f: HierFacts) -> str:
    t = f.topology
    try:
        fig = f.gpu_figures()
    except Undecided:
        return f"D={t.n_domains} K={t.panels_per_domain} N_p={t.n_panels}  Φ★ unknown (solver limit)"
    return (f"D={fig['D']} K={fig['K']} N_p={fig['N_p']}  Φπ={fig['Φπ_GPU']}  Φ★={fig['Φ★_GPU']}  "
            f"SIF={fig['SIF_GPU']}")


# --------------------------------------------------------------------------- count vectors
def _counts_picture(rec: Record) -> Picture:
    """The exact Φ★ witness packing and, for Algorithm 2 records, the algorithm's packing."""
    n, cap = int(rec["N"]), len(rec["counts"])  # n_1..n_G: G GPUs per node
    witness = [list(p) for p, m in rec["Φ★ witness"] for _ in range(int(m))]
    rows = [_packing_row("exact Φ★ witness", witness, n, cap, f"N={n}  T={rec['T']}  Φ★={rec['Φ★']}")]
    if "Algorithm 2 packing" in rec:
        fits = "" if rec.get("packing fits N") else "  (does not fit N)"
        rows.append(_packing_row(f"Algorithm 2 ({rec['branch']})", rec["Algorithm 2 packing"], n, cap,
                                 f"N={n}  T={rec['T']}  Algorithm 2 gives {rec['Algorithm 2']}{fits}"))
    counts = ", ".join(f"n{g}={c}" for g, c in enumerate(rec["counts"], 1) if c)
    return Picture(f"{record_label(rec)} — counts {counts} on N={n}", tuple(rows), "demand")


def _packing_row(what: str, bins: list[list[int]], n: int, capacity: int, figures: str) -> Row:
    bins = bins + [[] for _ in range(n - len(bins))]
    strips = tuple(_plain_strip(f"node {i}", [(f"g={g}", g) for g in b], max(capacity, sum(b)))
                   for i, b in enumerate(bins))
    phi = sum(1 for b in bins if 0 < sum(b) < capacity)
    return Row(what, strips, f"{figures}  (partial nodes: {phi})")


# --------------------------------------------------------------------------- drawing
def figure(pic: Picture) -> Any:
    """A matplotlib figure of ``pic``: one axes per row (Agg backend; the caller saves it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    colours = _colours(pic)
    width = max(_row_width(r) for r in pic.rows)
    fig, axes = plt.subplots(len(pic.rows), 1, squeeze=False,
                             figsize=(min(40.0, 6.0 + 0.16 * width), 1.3 + 0.75 * len(pic.rows)))
    for ax, row in zip(axes[:, 0], pic.rows):
        _draw_row(ax, row, colours, width)
    fig.suptitle(pic.title, fontsize=9, x=0.01, ha="left")
    fig.tight_layout()
    handles = [Patch(facecolor=c, hatch=h, edgecolor="black", label=name) for name, (c, h) in colours.items()]
    if handles:
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(handles), 12),
                   fontsize=7, frameon=False, title=f"colour = {pic.legend}", title_fontsize=7)
    return fig


def _row_width(row: Row) -> int:
    """GPUs plus one between strips and ``DOMAIN_GAP`` more between groups."""
    groups = len({s.group for s in row.strips})
    return sum(len(s.cells) + 1 for s in row.strips) + DOMAIN_GAP * (groups - 1)


def save(fig: Any, path: Path) -> Path:
    """Write (PNG at 200 dpi and an SVG beside it, atomically) and close ``fig``; the bounding box
    grows to the legend and the figures beside the rows, which lie outside the axes. An OSError
    propagates (``verify --plot`` reports it in one line)."""
    return save_figure(fig, path, bbox_inches="tight")


# Okabe–Ito colours, the most different first; the two near pairs (blue / sky blue, orange /
# vermillion) also differ by a hatch, and grey replaces black (grid lines stay visible).
CELL_STYLES = ((OKABE_ITO[5], ""), (OKABE_ITO[1], ""), (OKABE_ITO[3], ""), (OKABE_ITO[7], ""),
               (OKABE_ITO[4], ""), (OKABE_ITO[2], "//"), (OKABE_ITO[6], ".."), ("#999999", "xx"))
HATCHES = ("", "\\\\", "++", "oo")


def _colours(pic: Picture) -> dict[str, tuple[str, str]]:
    """(face colour, hatch) per job or demand name, in natural order: ``CELL_STYLES``, then the
    same colours with another hatch per further round of 8, so no two names look alike."""
    names = sorted({c for r in pic.rows for s in r.strips for c in s.cells if c is not None}, key=_natural)
    out = {}
    for i, name in enumerate(names):
        face, hatch = CELL_STYLES[i % 8]
        extra = HATCHES[i // 8 % len(HATCHES)]
        out[name] = (face, hatch + extra if hatch != extra else hatch)
    return out


def _natural(name: str) -> tuple[str, int]:
    """J2 before J10, g=3 before g=12."""
    head = name.rstrip("0123456789")
    return head, int(name[len(head):] or 0)


def _draw_row(ax: Any, row: Row, colours: dict[str, tuple[str, str]], width: int) -> None:
    from matplotlib.patches import Rectangle

    x, ticks, labels = 0, [], []
    for k, strip in enumerate(row.strips):
        if k and strip.group != row.strips[k - 1].group:
            x += DOMAIN_GAP
        for i, cell in enumerate(strip.cells):
            face, hatch = colours[cell] if cell else ("white", "")
            ax.add_patch(Rectangle((x + i, 0), 1, 1, facecolor=face, hatch=hatch, edgecolor="0.6", linewidth=0.4))
        for start, w in strip.units:
            ax.add_patch(Rectangle((x + start, 0), w, 1, fill=False, edgecolor="0.25", linewidth=0.8))
        for m in strip.marks:
            ax.add_patch(Rectangle((x + m.start, 0), m.width, 1, fill=False, edgecolor="black", linewidth=1.6))
            ax.text(x + m.start + 0.1, 1.08, m.text, fontsize=5, va="bottom")
        ticks.append(x + len(strip.cells) / 2)
        labels.append(strip.label)
        x += len(strip.cells) + 1
    ax.set_xlim(-0.5, width)
    ax.set_ylim(-0.1, 1.5)
    ax.set_yticks([])
    ax.set_xticks(ticks, labels, fontsize=6)
    ax.tick_params(length=0, pad=1)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    colour = "firebrick" if row.failure else "black"
    ax.set_ylabel(row.event, rotation=0, ha="right", va="center", fontsize=7, color=colour)
    text = row.figures + (f"\nNOT APPLIED: {row.failure}" if row.failure else "")
    ax.text(1.005, 0.5, text, transform=ax.transAxes, fontsize=7, va="center", color=colour)
    if row.failure:
        ax.set_facecolor("#fbeaea")


# --------------------------------------------------------------------------- a directory of figures
class Plotted(NamedTuple):
    written: tuple[Path, ...]
    skipped: tuple[Skipped, ...]


def plot_records(records: Iterable[Record], out_dir: Path) -> Plotted:
    """One PNG per record in ``out_dir`` (``NN-<claim>.png``, NN its place in the report), and
    the records that have no figure."""
    written, skipped = [], []
    for i, rec in enumerate(records, 1):
        pic = picture(rec)
        if isinstance(pic, Skipped):
            skipped.append(pic)
            continue
        name = re.sub(r"[^A-Za-z0-9.=+-]+", "_", record_label(rec)).strip("_")
        written.append(save(figure(pic), out_dir / f"{i:02d}-{name}.png"))
    return Plotted(tuple(written), tuple(skipped))
