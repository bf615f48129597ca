#!/usr/bin/env python3
"""The agents' series and the extender payloads of the bench scripts.

usage: gen_payloads.py WORK_DIR NODES

Writes WORK_DIR/metrics (one exposition with NODES agents' series, 8 × 80 GiB GPUs
each, fixed seed: 3 nodes in 5 NVSwitch-linked, loads spread over 0-95 %) and
WORK_DIR/prioritize.json (ExtenderArgs naming every node, as a cache-capable
kube-scheduler sends them to /filter and /prioritize).
"""
import json
import random
import sys

work, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
total = 80 * 2**30
fam = {k: [] for k in ["ai_gpu_memory_used_bytes", "ai_gpu_memory_total_bytes", "ai_gpu_nvlink_peer_links",
                       "ai_nvlink_competition_index", "ai_storage_await_seconds", "ai_collector_up"]}
names = []
for i in range(n):
    node = f"gpu-node-{i}"
    names.append(node)
    base = rng.random() * 0.95
    for g in range(8):
        used = min(1.0, max(0.0, base + (rng.random() - 0.5) * 0.1)) * total
        fam["ai_gpu_memory_used_bytes"].append(f'{{node="{node}",gpu_id="{g}"}} {used:.0f}')
        fam["ai_gpu_memory_total_bytes"].append(f'{{node="{node}",gpu_id="{g}"}} {total}')
        if i % 5 < 3:
            for p in range(8):
                if p != g:
                    fam["ai_gpu_nvlink_peer_links"].append(f'{{node="{node}",gpu_id="{g}",peer_gpu_id="{p}"}} 12')
    fam["ai_nvlink_competition_index"].append(f'{{node="{node}"}} {rng.random() * 0.7:.3f}')
    # 0-90 ms, in seconds as the agent reports it.
    fam["ai_storage_await_seconds"].append(f'{{node="{node}",device="nvme0n1"}} {rng.random() * 0.09:.5f}')
    fam["ai_collector_up"].append(f'{{node="{node}",collector="gpu",reason=""}} 1')
with open(f"{work}/metrics", "w") as f:
    for name, samples in fam.items():
        f.write(f"# TYPE {name} gauge\n")
        for s in samples:
            f.write(f"{name}{s}\n")
pod = {"metadata": {"name": "train-1", "namespace": "ml", "uid": "u-1", "annotations": {"ai.gpu-memory": "20Gi"}},
       "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
with open(f"{work}/prioritize.json", "w") as f:
    json.dump({"Pod": pod, "Nodes": None, "NodeNames": names}, f)
