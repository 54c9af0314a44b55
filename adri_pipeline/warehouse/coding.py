"""Coding rounds: each pass's Label Studio project, and the codes pulled from them."""

from __future__ import annotations

import polars as pl

from adri_pipeline.warehouse.connection import Warehouse, sql


def store_coding_project(warehouse: Warehouse, project: dict) -> None:
    """One pass's project of a round (round, pass, coder, project_id, url, doc_ids, codebook_hash, model)."""
    with warehouse.connect() as con:
        warehouse.upsert(con, "coding_projects", pl.DataFrame([project]))


def coding_projects(warehouse: Warehouse, round_name: str) -> pl.DataFrame:
    return warehouse.query(sql("coding_projects"), {"round": round_name})


def store_codes(warehouse: Warehouse, round_name: str, codes: pl.DataFrame) -> None:
    """Replace the round's codes with a fresh pull: an annotation edited in Label Studio is read anew,
    one deleted there leaves."""
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "coding_codes", codes, "round = ?", [round_name])


def read_codes(warehouse: Warehouse, round_name: str) -> pl.DataFrame:
    return warehouse.query(sql("coding_codes"), {"round": round_name})


def store_coding_sample(warehouse: Warehouse, sample: pl.DataFrame) -> None:
    """A round's random draw (round, doc_id, method, seed, stratified_by, stratum, weight, population,
    codebook_hash, model): stored once, before any document of it is coded."""
    with warehouse.connect() as con:
        warehouse.upsert(con, "coding_samples", sample)


def coding_samples(warehouse: Warehouse) -> pl.DataFrame:
    return warehouse.query(sql("coding_samples"))
