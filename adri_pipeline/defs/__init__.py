"""The Dagster skin, one folder per domain (as dagster-open-platform keeps defs/<domain>/): thin assets,
jobs, sensors and checks over each domain's application module (classification/service.py,
routing/service.py, mirror/service.py), plus the shared resources and IO manager.
adri_pipeline/definitions.py merges them into one code location."""
