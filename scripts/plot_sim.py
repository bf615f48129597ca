#!/usr/bin/env python3
"""Plots for `tidal simulate --out DIR`: reads DIR/*.csv, writes DIR/*.png.

One figure per metric with every policy: a per-node GPU-memory heatmap over
time (one panel per policy), LSCS over time, and the wait-time CDF.
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def heatmap(rows, out):
    by_policy = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        by_policy[r["policy"]][r["node"]][float(r["t_s"])] = float(r["gpu_memory_utilization"])
    policies = list(by_policy)
    # One time axis for every panel, so the policies compare at a glance.
    t_max = max(t for nodes in by_policy.values() for series in nodes.values() for t in series) / 60
    fig, axes = plt.subplots(len(policies), 1, figsize=(11, 2.2 * len(policies) + 0.6), squeeze=False)
    image = None
    for ax, policy in zip(axes[:, 0], policies):
        nodes = sorted(by_policy[policy])
        times = sorted(by_policy[policy][nodes[0]])
        grid = [[by_policy[policy][n].get(t, 0.0) for t in times] for n in nodes]
        image = ax.imshow(grid, aspect="auto", cmap="inferno", vmin=0, vmax=1, interpolation="nearest",
                          extent=[times[0] / 60, times[-1] / 60, len(nodes) - 0.5, -0.5])
        ax.set_yticks(range(len(nodes)))
        ax.set_yticklabels(nodes, fontsize=7)
        ax.set_title(policy, fontsize=9, loc="left")
        ax.set_xlim(0, t_max)
    axes[-1, 0].set_xlabel("time (min)")
    fig.colorbar(image, ax=axes[:, 0].tolist(), label="GPU memory utilisation", shrink=0.8)
    fig.suptitle("GPU memory per node over time")
    fig.savefig(out, dpi=110)
    plt.close(fig)


def lscs(rows, out):
    series = defaultdict(list)
    for r in rows:
        series[r["policy"]].append((float(r["t_s"]) / 60, 100 * float(r["lscs"])))
    fig, ax = plt.subplots(figsize=(9, 4))
    for policy, pts in series.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=policy, linewidth=1.4)
    ax.axhline(15, color="grey", linestyle="--", linewidth=1, label="healthy ≤ 15 %")
    ax.set_xlabel("time (min)")
    ax.set_ylabel("LSCS (%)")
    ax.set_title("Load imbalance across nodes (std-dev of 5-minute GPU-memory averages)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def waits(rows, out):
    series = defaultdict(list)
    for r in rows:
        series[r["policy"]].append(float(r["wait_s"]) / 60)
    fig, ax = plt.subplots(figsize=(9, 4))
    for policy, values in series.items():
        values.sort()
        n = len(values)
        ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=policy, linewidth=1.4)
    ax.set_xlabel("time waiting (min): pending and back-off, all attempts")
    ax.set_ylabel("fraction of tasks")
    ax.set_title("Wait-time CDF")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_sim.py DIR")
    d = sys.argv[1]
    heatmap(read(f"{d}/memory.csv"), f"{d}/gpu_memory_heatmap.png")
    lscs(read(f"{d}/lscs.csv"), f"{d}/lscs.png")
    waits(read(f"{d}/waits.csv"), f"{d}/wait_cdf.png")


if __name__ == "__main__":
    main()
