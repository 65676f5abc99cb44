#!/usr/bin/env python3
"""Reads benchmark CSVs of several passes, one process each of two or more kinds of run,
named KIND-PASS.csv, and prints for every case, for each kind, the median over the passes of
one ratio per pass and the range of those ratios:

- CSVs of side-by-side benchmarks (side_by_side.hpp: both sides in one process) give the
  rounds' own ratios (paired_ratio). Read kind "ab" (HiveCL against native) against "aa"
  (native against native, HIVECL_BENCH_COMPARED): the A/A spread is the least difference the
  machine can show.
- CSVs of bench-alone (one platform a process) give a median rate; its ratio is that over the
  median of the same case and pass of the kind named by --against (default "native").

Case names are matched without their trailing "[...]" label, which differs between the kinds.
The last rows give, for each kind, the median and range over the cases shown of their medians,
and the median of all their ratios pooled, with its 95% interval from resampling the passes
(processes, whose cases share the process's state; 2,000 resamples, seeded: the same table
each time).

  tests/bench/passes.py DIR... [--match REGEX] [--kinds KIND...] [--against KIND]

Several directories (runs) pool their passes.

Needs python3 alone.
"""
import argparse
import csv
import glob
import os
import random
import re
import statistics
from collections import OrderedDict

FILE = re.compile(r"^(?P<kind>.+)-(?P<pass>\d+)\.csv$")
LABEL = re.compile(r"\s*\[[^\]]*\]$")


def read_passes(directories):
    """kinds in the order first seen, and {case: {kind: {(directory, pass): row}}} with cases
    likewise: the passes of several directories (runs) pooled."""
    cases = OrderedDict()
    kinds = []
    for index, directory in enumerate(directories):
        named = [(FILE.match(os.path.basename(path)), path) for path in glob.glob(os.path.join(directory, "*.csv"))]
        for match, path in sorted(((m, p) for m, p in named if m), key=lambda pair: (int(pair[0]["pass"]), pair[1])):
            kind = match["kind"]
            if kind not in kinds:
                kinds.append(kind)
            with open(path, newline="") as stream:
                for row in csv.DictReader(stream):
                    case = f'{row["benchmark"]}: {LABEL.sub("", row["case"])}'
                    cases.setdefault(case, OrderedDict()).setdefault(kind, {})[(index, int(match["pass"]))] = row
    return kinds, cases


def ratios(by_kind, kind, against):
    """{pass: the kind's ratio}: its paired ratio, or its median over the reference's."""
    by_pass = {}
    for number, row in by_kind.get(kind, {}).items():
        if "paired_ratio" in row:
            by_pass[number] = float(row["paired_ratio"])
        elif number in by_kind.get(against, {}):
            by_pass[number] = float(row["median"]) / float(by_kind[against][number]["median"])
    return by_pass


def pooled(shown, kind, resamples=2000):
    """The median of every ratio of the cases shown, and its 95% interval with the passes
    (processes: a process's cases share its state) resampled."""
    by_pass = {}
    for by_kind in shown.values():
        for number, ratio in by_kind[kind].items():
            by_pass.setdefault(number, []).append(ratio)
    if not by_pass:
        return "—"
    passes = list(by_pass.values())
    generator = random.Random(1)
    medians = sorted(statistics.median([r for drawn in generator.choices(passes, k=len(passes)) for r in drawn])
                     for _ in range(resamples))
    every = [r for ratios_of_pass in passes for r in ratios_of_pass]
    return (f"{statistics.median(every):.3f} [{medians[int(0.025 * resamples)]:.3f}–"
            f"{medians[int(0.975 * resamples) - 1]:.3f}] n={len(every)} of {len(passes)} passes")


def summary(values):
    if not values:
        return "—"
    return f"{statistics.median(values):.3f} [{min(values):.2f}–{max(values):.2f}] n={len(values)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directories", nargs="+", metavar="DIR")
    parser.add_argument("--match", default="", help="only cases whose name matches this regular expression")
    parser.add_argument("--kinds", nargs="+", help="the kinds' columns in this order (default: as first seen)")
    parser.add_argument("--against", default="native", help="bench-alone's reference kind (default: native)")
    arguments = parser.parse_args()
    kinds, cases = read_passes(arguments.directories)
    if not cases:
        parser.error("no KIND-PASS.csv files with rows in " + " ".join(arguments.directories))
    kinds = arguments.kinds or kinds
    wanted = re.compile(arguments.match)
    shown = {case: {kind: ratios(by_kind, kind, arguments.against) for kind in kinds}
             for case, by_kind in cases.items() if wanted.search(case)}
    print("| case | " + " | ".join(f"{kind}: median of passes [range] n" for kind in kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for case, by_kind in shown.items():
        print(f"| {case} | " + " | ".join(summary(list(by_kind[kind].values())) for kind in kinds) + " |")
    medians = {kind: [statistics.median(by_kind[kind].values()) for by_kind in shown.values() if by_kind[kind]]
               for kind in kinds}
    print("| the cases' medians | " + " | ".join(summary(medians[kind]) for kind in kinds) + " |")
    print("| every ratio, pooled [95% interval] | " + " | ".join(pooled(shown, kind) for kind in kinds) + " |")


if __name__ == "__main__":
    main()
