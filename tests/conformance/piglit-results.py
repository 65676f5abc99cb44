#!/usr/bin/env python3
"""Turns the results of two piglit runs of its `cl` profile (the native one and the one through
HiveCL, each a directory of `piglit run`) into run-cts.sh's results.tsv: one row per result that
piglit's own summary counts (a subtest, or a test without subtests), its group as the suite.

    piglit-results.py NATIVE_RESULTS HIVECL_RESULTS > results.tsv
"""
import bz2
import json
import pathlib
import sys


def results(directory):
    """{(group, test): (result, seconds)} of one run; a test's time is shared by its subtests."""
    with bz2.open(pathlib.Path(directory) / "results.json.bz2", "rt") as stream:
        tests = json.load(stream)["tests"]
    found = {}
    for name, test in tests.items():
        group, _, rest = name.partition("@")
        seconds = test["time"]["end"] - test["time"]["start"]
        subtests = {key: value for key, value in test.get("subtests", {}).items() if key != "__type__"}
        if not subtests:
            found[(group, rest)] = (test["result"], seconds)
        for subtest, result in subtests.items():
            found[(group, f"{rest} / {subtest}")] = (result, seconds / len(subtests))
    return found


def main(native_directory, hivecl_directory):
    native, hivecl = results(native_directory), results(hivecl_directory)
    print("suite\ttest\tnative\thivecl\tnative_s\thivecl_s")
    for key in sorted(native.keys() | hivecl.keys()):
        native_result, native_s = native.get(key, ("missing", 0.0))
        hivecl_result, hivecl_s = hivecl.get(key, ("missing", 0.0))
        print(f"{key[0]}\t{key[1]}\t{native_result}\t{hivecl_result}\t{native_s:.1f}\t{hivecl_s:.1f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
