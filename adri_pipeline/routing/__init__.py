"""JEV typed-decision routing benchmark (contract jev-compat-v1)."""
