"""Any server that speaks TypeSafe's System One API (`POST /v1/systemone`): Laya (laya-serve),
sparrow-decider, jigor, Rizzo Flow, TypeSafe's hosted Jev, `adri routing serve`, jevcompat's mock —
through the official client, `typesafe-sdk`.

Named `jev:<url>` or `jev:<url>#<model>` wherever the project names a model (a routing candidate, a
mirror). The bearer key is read from `TYPESAFE_API_KEY`, the SDK's own variable; a local server without
authentication accepts any key (jevcompat auth.ignored-when-off), so none is needed there. The SDK's
errors are translated once into the project's (models/base.py). The answer is handed back as the JSON
the server sent, so that `jev.contract.check_response` judges every answer by the spec — the SDK parses
types, not whether the probabilities sum to 1 or the choice is the most probable option."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from adri_pipeline.jev.contract import DEFAULT_MODEL
from adri_pipeline.models import base

PREFIX = "jev:"
KEY_ENV = "TYPESAFE_API_KEY"
NO_KEY = "no-key"  # the SDK refuses to start without a key; a server without authentication ignores it


class InvalidResponse(RuntimeError):
    """The official client could not read the response as System One (a missing field, a wrong type)."""


def is_systemone(name: str) -> bool:
    return name.startswith(PREFIX) and len(name) > len(PREFIX)


def parse_name(name: str) -> tuple[str, str]:
    """'jev:http://127.0.0.1:8000#laya-small' -> ('http://127.0.0.1:8000', 'laya-small')."""
    if not is_systemone(name):
        raise ValueError(f"{name!r}: write a System One server as jev:<url> or jev:<url>#<model>")
    url, _, model = name.removeprefix(PREFIX).partition("#")
    url = url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{name!r}: the server's URL must start with http:// or https://")
    return url.removesuffix("/v1/systemone"), model or DEFAULT_MODEL


@dataclass(frozen=True)
class Answered:
    body: object  # the decoded JSON, as the server sent it
    seconds: float


class SystemOneServer:
    provider = "jev"

    def __init__(self, name: str, timeout_s: float = 30.0, retries: int = 2):
        """`retries`: the SDK's own retry on 408/429/5xx; the mirror gate asks for none (its timeout
        decides, and the rule answers)."""
        from typesafe_sdk import RetryPolicy, TypeSafeClient

        self.name = name
        self.host, self.model = parse_name(name)
        self.timeout_s, self.retries = timeout_s, retries
        self.client = TypeSafeClient(
            api_key=os.environ.get(KEY_ENV, "").strip() or NO_KEY,
            base_url=self.host,
            model=self.model,
            timeout=timeout_s,
            retry=RetryPolicy(max_retries=retries, backoff_initial=0.2),
        )
        self.start_hint = (
            f"start the server (e.g. `sparrow-decider serve --port PORT`, `laya-serve`, "
            f"`adri routing serve`) or fix the URL in {name!r}"
        )

    def __getstate__(self) -> dict:
        """Saved as where to reach the server, not as an open connection (the cold performance runs)."""
        return {"name": self.name, "timeout_s": self.timeout_s, "retries": self.retries}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def ask(self, request: dict) -> Answered:
        """One System One request (its `model` replaced by this server's); the JSON answered."""
        import typesafe_sdk as ts

        started = time.perf_counter()
        try:
            result = self.client.system_one(state=request["state"], questions=request["questions"], model=self.model)
        except ts.TypeSafeAPIResponseValidationError as exc:
            raise InvalidResponse(f"{self.host}: the official client rejects the response: {exc}") from None
        except ts.TypeSafeAPITimeoutError:
            raise base.TimedOut(f"{self.host}: no answer within {self.timeout_s:g} s") from None
        except ts.TypeSafeAPIConnectionError as exc:
            raise base.ServerUnreachable(f"{self.host}: {exc}") from None
        except ts.TypeSafeNotFoundError as exc:
            raise base.ModelMissing(
                f"{self.host} does not serve model {self.model!r} (or has no /v1/systemone): {exc}"
            ) from None
        except ts.TypeSafeRateLimitError as exc:
            raise base.Overloaded(exc.status, str(exc)) from None
        except ts.TypeSafeAPIError as exc:
            if exc.status in (503, 529):
                raise base.Overloaded(exc.status, str(exc)) from None
            raise base.ServerError(exc.status, f"{self.host}: {exc}") from None
        except ts.TypeSafeError as exc:  # refused before sending: the request itself is not System One
            raise base.ServerError(0, f"{self.host}: {exc}") from None
        seconds = time.perf_counter() - started
        return Answered(result.raw_http_response.json(), seconds)

    def close(self) -> None:
        self.client.close()
