"""`make demo`: the main job end to end on the project's own sample data, embedded default."""

from __future__ import annotations

from adri_pipeline.config import PROJECT_ROOT, Settings


def run_demo(settings: Settings) -> int:
    from adri_pipeline.cli import _print_summary, run_classification

    settings = settings.model_copy(update={
        "corpus": PROJECT_ROOT / "data" / "sample_corpus.jsonl",
        "codebook": PROJECT_ROOT / "codebooks" / "pilot.yaml",
        "backend": "embedded",
    })
    print(f"adri demo: sample corpus {settings.corpus.name}, codebook {settings.codebook.name}, embedded default")
    _print_summary(run_classification(settings, show_progress=False))
    return 0
