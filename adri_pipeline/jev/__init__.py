"""The typed-decision wire (System One) shared by the routing benchmark and the mirror gate:
canonical examples, the one state serializer, metrics. Owned by neither."""
