"""Model backends behind one interface (base.Backend); `select_backend` picks one for a run."""

from adri_pipeline.classification.backends.base import Backend, BackendError, BackendResponse
from adri_pipeline.classification.backends.select import select_backend

__all__ = ["Backend", "BackendError", "BackendResponse", "select_backend"]
