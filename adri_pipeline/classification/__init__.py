"""Evidence-anchored classification of abstracts against a codebook (ADR 0011: docs/classification.md)."""
