"""Label Studio, through its official client (`label-studio-sdk`): the few calls a coding round makes,
with the client's errors translated once into ours.

Label Studio runs on its own (`make label-studio`, `make label-studio-serve`); the round only needs
its URL and a user's API token (ADRI_LABEL_STUDIO_URL, ADRI_LABEL_STUDIO_TOKEN). The client is an
optional dependency (the `coding` extra, which `make label-studio` installs). The SDK 1.0 line is
the one that fits beside our numpy: the SDK 2 line pulls OpenCV builds that pin numpy below 2.3.
"""

from __future__ import annotations

import json

from adri_pipeline.errors import AdriError


class LabelStudioError(AdriError, RuntimeError):
    """Label Studio refused a call, or cannot be reached."""


class LabelStudio:
    """One Label Studio server, as one user (the token's)."""

    def __init__(self, url: str, token: str | None, timeout_s: float = 60.0):
        if not token:
            raise LabelStudioError(
                "no Label Studio API token: set ADRI_LABEL_STUDIO_TOKEN (Label Studio: "
                "Account & Settings, Legacy Token)"
            )
        try:
            from label_studio_sdk.client import LabelStudio as Client
        except ImportError:
            raise LabelStudioError(
                "label-studio-sdk is not installed: pip install -e '.[coding]' (make label-studio installs it)"
            ) from None
        self.url = url.rstrip("/")
        self._client = Client(base_url=self.url, api_key=token, timeout=timeout_s)

    def _call(self, what: str, call, *args, **kwargs):
        import httpx  # the SDK's transport
        from label_studio_sdk.core.api_error import ApiError

        try:
            return call(*args, **kwargs)
        except ApiError as exc:
            hint = " (the API token? ADRI_LABEL_STUDIO_TOKEN)" if exc.status_code in (401, 403) else ""
            raise LabelStudioError(
                f"Label Studio at {self.url} refused to {what}: HTTP {exc.status_code} {str(exc.body)[:300]}{hint}"
            ) from None
        except httpx.TransportError as exc:
            raise LabelStudioError(
                f"Label Studio at {self.url} cannot be reached to {what}: {type(exc).__name__}: {exc}"
            ) from None

    def create_project(self, title: str, label_config: str, show_predictions: bool, description: str) -> int:
        """A project is one coder's queue (or the one reviewer's), so a task takes one annotation.
        `show_predictions`: whether annotators see the tasks' predictions (Label Studio enforces it)."""
        project = self._call(
            "create a project",
            self._client.projects.create,
            title=title,
            description=description,
            label_config=label_config,
            show_collab_predictions=show_predictions,
            maximum_annotations=1,
            show_annotation_history=False,
            show_skip_button=False,
        )
        return int(project.id)

    def import_tasks(self, project: int, tasks: list[dict]) -> None:
        """`tasks`: {"data": ..., "predictions": [...]} each."""
        self._call("import the round's documents", self._client.projects.import_tasks, project, request=tasks)

    def annotated_tasks(self, project: int) -> list[dict]:
        """Every task of the project with its annotations, as Label Studio exports them (JSON)."""
        chunks = self._call(
            "export the annotations",
            lambda: b"".join(
                self._client.projects.exports.download_sync(project, export_type="JSON", download_all_tasks=True)
            ),
        )
        return json.loads(chunks or b"[]")

    def user_emails(self) -> dict[int, str]:
        return {
            int(u.id): u.email or u.username or str(u.id) for u in self._call("list users", self._client.users.list)
        }

    def labeling_url(self, project: int) -> str:
        return f"{self.url}/projects/{project}/data?labeling=1"
