"""The price table (prices.toml): hourly price per machine shape and the shape each candidate or
mirror ran on. Below the domains: the routing benchmark costs its candidates with it and the mirror
evaluation its mirrors, from one file (ADRI_ROUTING_PRICES)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adri_pipeline.config import ROUTING_PRICES as PRICES
from adri_pipeline.errors import read_utf8
from adri_pipeline.jev.contract import RoutingConfigError


class Shape(BaseModel):
    """A machine shape's price: a finite positive number written as one (TOML's `inf`, the string
    "0.5" and `true` are refused, naming the field, rather than read as a price)."""

    model_config = ConfigDict(extra="forbid")
    hourly_usd: float = Field(gt=0, strict=True, allow_inf_nan=False)
    description: str = ""


class PriceTable(BaseModel):
    """prices.toml: hourly price per machine shape, and the shape each candidate ran on."""

    model_config = ConfigDict(extra="forbid")
    shapes: dict[str, Shape]
    ran_on: dict[str, str]  # candidate name (or "default") -> shape
    path: Path | None = None

    @classmethod
    def read(cls, path: Path = PRICES) -> "PriceTable":
        try:
            table = cls.model_validate(tomllib.loads(read_utf8(path, RoutingConfigError)) | {"path": path})
        except FileNotFoundError:
            raise RoutingConfigError(f"price table {path} does not exist (ADRI_ROUTING_PRICES)") from None
        except tomllib.TOMLDecodeError as exc:
            raise RoutingConfigError(f"{path}: not valid TOML: {exc}") from None
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise RoutingConfigError(f"{path}: field {where}: {error['msg']}") from None
        unknown = {c: s for c, s in table.ran_on.items() if s not in table.shapes}
        if unknown:
            candidate, shape = next(iter(unknown.items()))
            raise RoutingConfigError(
                f"{path}: ran_on.{candidate} names shape {shape!r}, which is not under "
                f"[shapes] ({', '.join(table.shapes)})"
            )
        if "default" not in table.ran_on:
            raise RoutingConfigError(f"{path}: ran_on needs a 'default' shape")
        return table

    def shape_of(self, candidate: str) -> str:
        return self.ran_on.get(candidate, self.ran_on["default"])

    def hourly(self, candidate: str) -> float:
        return self.shapes[self.shape_of(candidate)].hourly_usd
