"""The report's plots, as SVG text (matplotlib, Agg backend)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402
from statsmodels.graphics.factorplots import interaction_plot  # noqa: E402


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog: the SVG is inlined


def cell_ci(cells: list[dict], factors: list[str], confidence: float) -> pd.DataFrame:
    """Mean and t-interval per treatment (scipy.stats.t)."""
    rows = []
    for c in cells:
        n, m, sd = c["n"], c["mean"], c["sd"]
        if n > 1 and sd:
            lo, hi = stats.t.interval(confidence, n - 1, loc=m, scale=sd / np.sqrt(n))
        else:
            lo = hi = m
        rows.append({"treatment": ", ".join(str(c[f]) for f in factors), "mean": m, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def means(cells, factors, response, confidence=0.95) -> str:
    d = cell_ci(cells, factors, confidence)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(d)), 3.2))
    ax.errorbar(range(len(d)), d["mean"], yerr=[d["mean"] - d["lo"], d["hi"] - d["mean"]], fmt="o", capsize=4)
    ax.set_xticks(range(len(d)), d["treatment"], rotation=30, ha="right")
    ax.set_ylabel(response)
    ax.set_title(f"{response}: mean and {round(confidence * 100)} % CI per treatment")
    return _svg(fig)


def interaction(values: list[dict], treatment: str, blocks: list[str], levels: dict, response: str) -> str:
    d = pd.DataFrame(values)
    x = blocks[0] if blocks else treatment
    fig, ax = plt.subplots(figsize=(5, 3.2))
    interaction_plot(
        pd.Categorical(d[x].astype(str), categories=levels[x]).codes,
        d[treatment].astype(str), d["value"].astype(float), ax=ax, markers=None, xlabel=x, ylabel=response,
        legendtitle=treatment,
    )
    ax.set_xticks(range(len(levels[x])), levels[x])
    ax.set_title(f"{response}: {treatment} x {x}")
    return _svg(fig)


def residuals(res: dict, response: str) -> str:
    fitted, resid, order = (np.asarray(res[k], dtype=float) for k in ("fitted", "resid", "order"))
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.3), layout="constrained")
    axes[0].scatter(fitted, resid, s=12)
    axes[0].axhline(0, color="grey", lw=0.8)
    axes[0].set(xlabel="fitted", ylabel="residual", title="residuals vs fitted")
    stats.probplot(resid, dist="norm", plot=axes[1])
    axes[1].set_title("normal Q-Q")
    idx = np.argsort(order)
    axes[2].plot(order[idx], resid[idx], marker="o", ms=3)
    axes[2].axhline(0, color="grey", lw=0.8)
    axes[2].set(xlabel="run order", ylabel="residual", title="residuals in run order")
    fig.suptitle(response)
    return _svg(fig)
