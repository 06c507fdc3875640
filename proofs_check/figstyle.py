"""One look for every figure the toolkit draws (issue 25: figures fit for a paper).

* **Output**: PNG at 200 dpi and an SVG beside it (same name, ``.svg``), both written atomically.
* **Colours**: the Okabe–Ito palette (Okabe & Ito 2008, colour-blind safe; Wong, Nat. Methods 8:441,
  2011), 8 colours; beyond 8 series the colour repeats with another marker and dash pattern, so
  every series differs from every other in at least two of colour, marker and dashes.
* **Series never hide each other**: :func:`dodge` spreads the x positions of series that share a
  point (a few per cent of the axis), and line plots of equal values differ by marker and dashes.
* **Statistics**: :func:`mean_ci` (mean and 95 % Student-t half-width over seeds) for error bars
  and bands; :func:`wilson` for a proportion.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from proofs_check.core.atomic import replace_atomic

Replace = Callable[[Path, Callable[[Path], None]], None]

DPI = 200
# Okabe–Ito: black, orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple.
OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", "--", "-.", ":")


class SeriesStyle(NamedTuple):
    """Colour, marker and line style of one series (``plot(..., **style._asdict())`` minus names)."""

    color: str
    marker: str
    linestyle: str

    def kwargs(self) -> dict[str, str]:
        return {"color": self.color, "marker": self.marker, "linestyle": self.linestyle}


def style(i: int) -> SeriesStyle:
    """The i-th series' style: colours cycle over Okabe–Ito (yellow last: it is faint on white),
    markers shift by one and dashes by one each time the colours wrap around."""
    order = (5, 6, 3, 1, 7, 2, 0, 4)
    wrap, k = divmod(i, len(order))
    return SeriesStyle(OKABE_ITO[order[k]], MARKERS[(k + wrap) % len(MARKERS)], DASHES[wrap % len(DASHES)])


def styles(names: Sequence[str]) -> dict[str, SeriesStyle]:
    """A style per name, in the order given (the same list gives the same styles in every figure)."""
    return {n: style(i) for i, n in enumerate(names)}


def dodge(i: int, n: int, span: float) -> float:
    """Offset of series ``i`` of ``n`` sharing an x position, spread over ``span`` (centred)."""
    return 0.0 if n <= 1 else span * (i / (n - 1) - 0.5)


def t975(df: int) -> float:
    """Two-sided 95 % Student-t quantile: Cornish–Fisher expansion around z = 1.96 (error
    < 0.002 for df ≥ 4; exact values for the smallest df)."""
    small = {1: 12.706, 2: 4.303, 3: 3.182}
    if df in small:
        return small[df]
    z = 1.959964
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def mean_ci(values: Sequence[float]) -> tuple[float, float, int]:
    """(mean, 95 % CI half-width, n) over the non-NaN values; half-width NaN below two values."""
    ok = [v for v in values if not math.isnan(v)]
    if not ok:
        return float("nan"), float("nan"), 0
    if len(ok) < 2:
        return ok[0], float("nan"), 1
    return statistics.fmean(ok), t975(len(ok) - 1) * statistics.stdev(ok) / math.sqrt(len(ok)), len(ok)


def wilson(k: int, n: int) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion k / n."""
    if n == 0:
        return float("nan"), float("nan")
    z, p = 1.959964, k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


def save_figure(fig: Any, path: Path, replace: Replace = replace_atomic, **savefig: Any) -> Path:
    """Lay out, write and close a matplotlib figure: ``path`` (PNG, 200 dpi) and the SVG beside it,
    each through ``replace`` (default: atomically, a temporary file beside it then renamed; an
    OSError propagates — the commands pass their one-line ``replace_output``). Returns ``path``."""
    import matplotlib.pyplot as plt

    try:
        if "bbox_inches" not in savefig:
            fig.tight_layout()
        replace(path, lambda tmp: fig.savefig(tmp, dpi=DPI, **savefig))
        replace(path.with_suffix(".svg"), lambda tmp: fig.savefig(tmp, **savefig))
    finally:
        plt.close(fig)
    return path
