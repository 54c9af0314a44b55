"""The typed-decision contract `jev-compat-v1` shared by the routing benchmark and the mirror gate:
canonical examples, the one state serializer, metrics. Owned by neither."""
