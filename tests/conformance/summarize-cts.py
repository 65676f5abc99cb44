#!/usr/bin/env python3
"""Turns run-cts.sh's (or run-piglit.sh's) results.tsv into Markdown: per suite, how many tests
passed, failed or were skipped natively and through HiveCL, then every test whose HiveCL result
differs from its native one (the tests that pass natively but not through HiveCL need a reason
in docs/CONFORMANCE.md)."""
import collections
import csv
import sys


def main(path):
    with open(path, newline="") as table:
        rows = list(csv.DictReader(table, delimiter="\t"))
    suites = collections.OrderedDict()
    for row in rows:
        suites.setdefault(row["suite"], []).append(row)

    def counts(tests, side):
        tally = collections.Counter(row[side] for row in tests)
        other = sum(n for result, n in tally.items() if result not in ("pass", "skip"))
        return f"{tally['pass']} / {other} / {tally['skip']}"

    print("| suite | tests | native pass / not / skip | HiveCL pass / not / skip | "
          "crashed natively (run through HiveCL last) | passes natively only | seconds native / HiveCL |")
    print("|---|---|---|---|---|---|---|")
    for suite, tests in suites.items():
        lost = sum(1 for row in tests if row["native"] == "pass" and row["hivecl"] != "pass")
        crashed = sum(1 for row in tests if row["native"].startswith("crash"))
        seconds = [sum(float(row[f"{side}_s"]) for row in tests) for side in ("native", "hivecl")]
        print(f"| {suite} | {len(tests)} | {counts(tests, 'native')} | {counts(tests, 'hivecl')} | {crashed} | "
              f"{lost} | {seconds[0]:.0f} / {seconds[1]:.0f} |")
    differing = [row for row in rows if row["native"] != row["hivecl"]]
    if differing:
        print("\nTests whose result through HiveCL differs from the native one:\n")
        print("| suite | test | native | HiveCL |")
        print("|---|---|---|---|")
        for row in differing:
            print(f"| {row['suite']} | {row['test']} | {row['native']} | {row['hivecl']} |")


if __name__ == "__main__":
    main(sys.argv[1])
