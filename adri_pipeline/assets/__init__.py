"""Dagster assets, one module per group; each is a thin adapter over the domain modules."""
