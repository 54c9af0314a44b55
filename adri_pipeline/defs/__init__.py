"""The Dagster skin, one module per capability (as dagster-open-platform keeps defs/<domain>/): thin
assets over the application layer (adri_pipeline.pipeline), plus resources, IO manager, jobs,
sensors and schedule. adri_pipeline/definitions.py merges them into one code location."""
