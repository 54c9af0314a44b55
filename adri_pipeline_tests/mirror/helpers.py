"""The real labelled PDAP data (../shared/data/mirror, the test skipped when absent), cut to the size a
test needs: the replay and the evaluation tests both train on it."""

import csv
import itertools
import sys

from adri_pipeline_tests.conftest import shared


def pdap_subset(folder, records: int):
    """The first `records` PDAP rows, kept in the test's temporary folder only (never in the repository)."""
    source = shared("mirror/pdap/labeled-urls-headers_all.csv")
    subset = folder / "pdap.csv"
    csv.field_size_limit(sys.maxsize)
    with source.open(encoding="utf-8", newline="") as f, subset.open("w", encoding="utf-8", newline="") as out:
        reader = csv.DictReader(f)
        writer = csv.DictWriter(out, fieldnames=reader.fieldnames)
        writer.writeheader()
        writer.writerows(itertools.islice(reader, records))
    return subset
