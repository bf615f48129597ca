#!/usr/bin/env python3
"""Fails on an #include that reaches up a layer or into another layer's private folder.

Layers, lowest first (LEVEL below; docs/design.md); a layer may include the public
headers (include/tidal/<layer>/) of its own layer, of any layer below it, and of a
layer on its own level; private headers (src/<layer>/...) only of its own layer.

    scripts/check-layers.py            # from the repository's root; exit 1 on a violation

KNOWN lists reaches that existed before the check, to be removed:
a new one fails, and one that is gone must be taken off the list (so the list only
shrinks).
"""
import pathlib
import re
import subprocess
import sys

LEVEL = {
    "core": 0,
    "http": 1,
    "kube": 1,
    "kubetypes": 1,
    "gpu": 1,
    "metrics": 1,  # on core alone
    "policy": 2,
    "agent": 4,
    "deviceplugin": 4,
    "extender": 4,
    "health": 4,
    "rebalance": 4,
    "sim": 4,
    "cli": 5,
}

# (file, included header): reaches to remove, each with what removes it.
KNOWN = set()  # none left

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "tidal"] and len(parts) > 3:
        return parts[2]
    return None


def check(root):
    files = subprocess.check_output(
        ["git", "ls-files", "src", "include"], cwd=root, text=True).split()
    problems, seen = [], set()
    for f in files:
        if not f.endswith((".h", ".cc")):
            continue
        own = layer_of(f)
        if own not in LEVEL:
            if own is not None:
                problems.append(f"{f}: layer {own!r} is not in LEVEL (scripts/check-layers.py)")
            continue
        for n, line in enumerate((root / f).read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            header = m.group(1)
            if header.startswith("tidal/"):
                target, private = header.split("/")[1], False
            elif (root / "src" / header).exists():
                target, private = header.split("/")[0], True
            else:
                continue  # the file's own folder, tests/testing, generated headers
            if target == own:
                continue
            if private:
                why = f"includes {header}, private to layer {target}"
            elif target not in LEVEL:
                why = f"includes {header} of unknown layer {target}"
            elif LEVEL[target] > LEVEL[own]:
                why = f"includes {header}: {target} is above {own}"
            else:
                continue
            if (f, header) in KNOWN:
                seen.add((f, header))
                continue
            problems.append(f"{f}:{n}: {why}")
    for f, header in sorted(KNOWN - seen):
        problems.append(f"{f}: no longer includes {header}: take it off KNOWN in "
                        "scripts/check-layers.py")
    return problems


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-layers: every include within its layer's reach ({len(KNOWN)} known reaches "
          "left to remove)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
