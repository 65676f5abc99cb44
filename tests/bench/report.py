#!/usr/bin/env python3
"""Turns the CSV of a benchmark run (every benchmark appends to $HIVECL_BENCH_CSV, see
tests/bench/side_by_side.hpp) into a Markdown report with PNG plots:

  bandwidth-<benchmark>.png  bandwidth against transfer size, native and HiveCL
  overhead-examples.png      HiveCL / native time per application (examples benchmark)
  ratios.png                 HiveCL / native for every other fixed-size case

  tests/bench/report.py RUN.csv OUTPUT_DIR [--title TITLE]

Needs python3 and matplotlib (Debian: python3-matplotlib). A case measured more than once
(several runs appended to one file) is reported from its last row.
"""
import argparse
import csv
import os
import re
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend is chosen first)

SIZE = re.compile(r"\s*\b\d+ (B|KiB|MiB|GiB)\b")
# A window's length ("x32"), which benchmarks shorten for the largest sizes.
WINDOW = re.compile(r"\bx\d+\b")


def read_rows(path):
    rows = OrderedDict()
    with open(path, newline="") as stream:
        for row in csv.DictReader(stream):
            for key in ("bytes", "native_median", "native_min", "native_max", "hivecl_median", "hivecl_min",
                        "hivecl_max", "ratio", "paired_ratio", "paired_min", "paired_max"):
                row[key] = float(row[key])
            rows[(row["benchmark"], row["case"])] = row
    return list(rows.values())


def bandwidth_series(rows):
    """{benchmark: {series: [rows by size]}} for cases whose name carries a size ("read 4 KiB")."""
    series = OrderedDict()
    for row in rows:
        if row["unit"] != "GB/s" or not SIZE.search(row["case"]):
            continue
        name = WINDOW.sub("window", SIZE.sub("", row["case"])).strip()
        series.setdefault(row["benchmark"], OrderedDict()).setdefault(name, []).append(row)
    return {benchmark: {name: sorted(points, key=lambda r: r["bytes"]) for name, points in by_name.items()
                        if len(points) > 1}
            for benchmark, by_name in series.items()}


def plot_bandwidth(benchmark, series, directory):
    figure, axes = plt.subplots(figsize=(12, 5.5))
    for index, (name, points) in enumerate(series.items()):
        sizes = [p["bytes"] for p in points]
        color = f"C{index}"
        axes.plot(sizes, [p["native_median"] for p in points], "-o", color=color, label=f"{name}, native")
        axes.plot(sizes, [p["hivecl_median"] for p in points], "--s", color=color, label=f"{name}, HiveCL")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("transfer size (bytes)")
    axes.set_ylabel("bandwidth (GB/s, median)")
    axes.set_title(f"{benchmark}: bandwidth against size")
    axes.grid(True, which="both", alpha=0.3)
    # Beside the axes: a benchmark of many cases has a legend as tall as the plot.
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    name = f"bandwidth-{benchmark}.png"
    figure.tight_layout()
    figure.savefig(os.path.join(directory, name), dpi=110)
    plt.close(figure)
    return name


def plot_ratios(rows, title, filename, directory):
    figure, axes = plt.subplots(figsize=(9, 0.35 * len(rows) + 1.5))
    labels = [f"{r['benchmark']}: {r['case']}" for r in rows]
    axes.barh(range(len(rows)), [r["ratio"] for r in rows], color="C1")
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_yticks(range(len(rows)))
    axes.set_yticklabels(labels, fontsize="small")
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel("HiveCL / native (time: >1 is slower; rate: <1 is slower)")
    axes.set_title(title)
    axes.grid(True, axis="x", which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(os.path.join(directory, filename), dpi=110)
    plt.close(figure)
    return filename


def table(rows):
    lines = ["| benchmark | case | unit | native median [min–max] | HiveCL median [min–max] | HiveCL / native "
             "| rounds' own ratios, median [min–max] |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['benchmark']} | {r['case']} | {r['unit']} | {r['native_median']:.4g} "
                     f"[{r['native_min']:.4g}–{r['native_max']:.4g}] | {r['hivecl_median']:.4g} "
                     f"[{r['hivecl_min']:.4g}–{r['hivecl_max']:.4g}] | {r['ratio']:.3f} "
                     f"| {r['paired_ratio']:.3f} [{r['paired_min']:.3g}–{r['paired_max']:.3g}] |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("output_dir")
    parser.add_argument("--title", default="HiveCL benchmark report")
    arguments = parser.parse_args()
    os.makedirs(arguments.output_dir, exist_ok=True)
    rows = read_rows(arguments.csv)
    sections = [f"# {arguments.title}", "",
                f"From `{os.path.basename(arguments.csv)}`: medians over the rounds of each case, native and "
                "HiveCL measured in turn in the same run (either first in turn), and the median of each round's own "
                "ratio. For times (ms, us) a ratio above 1 means HiveCL "
                "is slower; for rates (GB/s, GFLOP/s) a ratio below 1 does.", ""]
    for benchmark, series in bandwidth_series(rows).items():
        if series:
            sections += [f"## Bandwidth against size: {benchmark}", "",
                         f"![{benchmark}]({plot_bandwidth(benchmark, series, arguments.output_dir)})", ""]
    applications = [r for r in rows if r["benchmark"] == "examples"]
    if applications:
        sections += ["## Overhead per application", "",
                     f"![applications]({plot_ratios(applications, 'examples: HiveCL / native time', 'overhead-examples.png', arguments.output_dir)})",
                     ""]
    fixed = [r for r in rows if r["benchmark"] != "examples" and not SIZE.search(r["case"])]
    if fixed:
        sections += ["## Other cases", "",
                     f"![ratios]({plot_ratios(fixed, 'HiveCL / native', 'ratios.png', arguments.output_dir)})", ""]
    sections += ["## All figures", "", table(rows), ""]
    with open(os.path.join(arguments.output_dir, "report.md"), "w") as stream:
        stream.write("\n".join(sections))
    print(os.path.join(arguments.output_dir, "report.md"))


if __name__ == "__main__":
    main()
