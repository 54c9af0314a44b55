"""What the embedded model's decision margins look like on a corpus, and what the defaults do.

For each enum/list variable: the spread of (best value score - median option score), and the
share of answers the defaults turn into nao_informado; for booleans the true-false gap; for text
variables the best window score. These are the numbers EmbeddedParams' defaults were read from.

    .venv/bin/python benchmarks/embedded_score_spread.py [CORPUS] [LIMIT]
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.classification.backends.embedded import EmbeddedBackend, embed_document  # noqa: E402
from adri_pipeline.classification.codebook import load_codebook  # noqa: E402
from adri_pipeline.classification.corpus import load_corpus  # noqa: E402
from adri_pipeline.classification.prompt import build_prompt  # noqa: E402
from adri_pipeline.classification.runner import as_documents  # noqa: E402
from adri_pipeline.config import PILOT_CODEBOOK, SHARED_DATA  # noqa: E402


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED_DATA / "corpus" / "openalex_direito_alimentacao.jsonl"
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    codebook = load_codebook(PILOT_CODEBOOK)
    backend = EmbeddedBackend()
    backend.prepare(codebook, build_prompt(codebook))
    settings = backend.settings
    spreads: dict[str, list[float]] = {name: [] for name in codebook.variables}
    for document in as_documents(load_corpus(corpus).documents.head(limit)):
        vectors = embed_document(document, title_window=False)
        for name, var in codebook.variables.items():
            options, targets = backend._targets[name]
            per_window = vectors.windows @ targets.T
            scores = (1 - settings.document_weight) * per_window.max(axis=0) + settings.document_weight * (
                targets @ vectors.document
            )
            if var.type == "boolean":
                spreads[name].append(float(scores[options.index("true")] - scores[options.index("false")]))
            elif var.type == "text":
                spreads[name].append(float(scores[0]))
            else:
                spreads[name].append(float(scores.max() - np.median(scores)))
    print(f"{corpus.name}, first {limit} documents; defaults {settings.model_dump()}")
    for name, values in spreads.items():
        var = codebook.variables[name]
        values = np.array(values)
        if var.type == "boolean":
            share, what = (values <= settings.boolean_margin).mean(), "answered false"
        elif var.type == "text":
            share, what = (values < settings.text_threshold).mean(), "nao_informado"
        else:
            share, what = (values < settings.value_margin).mean(), "nao_informado"
        p10, p50, p90 = np.percentile(values, [10, 50, 90])
        print(f"  {name:<12} {var.type:<7} p10 {p10:.4f}  p50 {p50:.4f}  p90 {p90:.4f}  -> {share:.0%} {what}")


if __name__ == "__main__":
    main()
