"""The end-to-end scenarios: each module has nodes() (the fake cluster) and
run(cluster, checks), and optionally policy(p) (the deploy's policy, changed)."""
from . import (bad_input, brief_cluster, device_plugin, fragmentation, look_ahead, prometheus_stops,
               scope, serve_restarts)

SCENARIOS = {
    "brief_cluster": brief_cluster,
    "bad_input": bad_input,
    "prometheus_stops": prometheus_stops.WithGoldenPool,
    "prometheus_stops_no_golden": prometheus_stops.WithoutGoldenPool,
    "serve_restarts": serve_restarts,
    "scope": scope,
    "device_plugin": device_plugin,
    "fragmentation": fragmentation,
    "look_ahead": look_ahead,
}
