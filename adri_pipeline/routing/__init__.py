"""JEV typed-decision routing benchmark over the System One wire."""
