"""Mirror decision models: a small model beside a rule, in shadow or (hardening-only) control.

The runtime gate (`gate.py`) is usable by an agent platform without Dagster.
"""

from adri_pipeline.mirror.gate import Gate
from adri_pipeline.mirror.gate_config import DecisionPoint, GateConfig, GateConfigError, load_gate_config

__all__ = ["DecisionPoint", "Gate", "GateConfig", "GateConfigError", "load_gate_config"]
