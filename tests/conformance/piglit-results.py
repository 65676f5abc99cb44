#!/usr/bin/env python3
"""Reads the results of `piglit run` of its `cl` profile for run-piglit.sh.

    piglit-results.py table NATIVE_RESULTS HIVECL_RESULTS...  > results.tsv
        run-cts.sh's results.tsv: one row per result that piglit's own summary counts (a
        subtest, or a test without subtests), its group as the suite; the HiveCL side's
        results may come in several runs.
    piglit-results.py crashed RESULTS  > names
        the tests that crashed in that run, one name a line (piglit's --test-list).
    piglit-results.py exclusions NAMES_FILE
        a regular expression matching exactly each of those names (piglit's --exclude-tests).
"""
import bz2
import json
import pathlib
import re
import sys


def tests_of(directory):
    with bz2.open(pathlib.Path(directory) / "results.json.bz2", "rt") as stream:
        return json.load(stream)["tests"]


def results(directories):
    """{(group, test): (result, seconds)} of the runs; a test's time is shared by its subtests."""
    found = {}
    for directory in directories:
        for name, test in tests_of(directory).items():
            group, _, rest = name.partition("@")
            seconds = test["time"]["end"] - test["time"]["start"]
            subtests = {key: value for key, value in test.get("subtests", {}).items() if key != "__type__"}
            if not subtests:
                found[(group, rest)] = (test["result"], seconds)
            for subtest, result in subtests.items():
                found[(group, f"{rest} / {subtest}")] = (result, seconds / len(subtests))
    return found


def table(native_directory, *hivecl_directories):
    native, hivecl = results([native_directory]), results(hivecl_directories)
    print("suite\ttest\tnative\thivecl\tnative_s\thivecl_s")
    for key in sorted(native.keys() | hivecl.keys()):
        native_result, native_s = native.get(key, ("missing", 0.0))
        hivecl_result, hivecl_s = hivecl.get(key, ("missing", 0.0))
        print(f"{key[0]}\t{key[1]}\t{native_result}\t{hivecl_result}\t{native_s:.1f}\t{hivecl_s:.1f}")


def crashed(directory):
    for name, test in sorted(tests_of(directory).items()):
        if test["result"] == "crash":
            print(name)


def exclusions(names_file):
    for name in pathlib.Path(names_file).read_text().splitlines():
        print(f"^{re.escape(name)}$")


if __name__ == "__main__":
    {"table": table, "crashed": crashed, "exclusions": exclusions}[sys.argv[1]](*sys.argv[2:])
