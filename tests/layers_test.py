#!/usr/bin/env python3
"""The layers' include arrows, read from the build's compile commands.

usage: layers_test.py COMPILE_COMMANDS_JSON SOURCE_DIR

docs/architecture.md draws the layers: base/ (env, error, progress, the op table, the host
kernels) is used by core/ (libphynexus), the loader and the plugins; plugins/ and loader/
never include anything under core/, and base/ nothing under core/, loader/ or plugins/.
Every compile of a source in one of those folders is checked: no include path (-I,
-isystem, -iquote) may point into a folder its layer must not see. Exits 1 naming each
source and path that does.
"""
import json
import os
import shlex
import sys

# Each layer's folder and the folders its sources must not have on their include path.
FORBIDDEN = {
    "plugins": ["core"],
    "loader": ["core", "plugins"],
    "base": ["core", "loader", "plugins"],
}


def include_paths(arguments, directory):
    """The include folders of one compile, absolute and normalized."""
    paths = []
    for i, argument in enumerate(arguments):
        for flag in ("-I", "-isystem", "-iquote"):
            if argument == flag and i + 1 < len(arguments):
                paths.append(arguments[i + 1])
            elif argument.startswith(flag) and argument != flag:
                paths.append(argument[len(flag):])
    return [os.path.normpath(os.path.join(directory, path)) for path in paths]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as file:
        commands = json.load(file)
    source_dir = os.path.realpath(sys.argv[2])
    checked, violations = 0, []
    for entry in commands:
        source = os.path.relpath(os.path.realpath(entry["file"]), source_dir)
        layer = source.split(os.sep)[0]
        if layer not in FORBIDDEN:
            continue
        checked += 1
        arguments = entry.get("arguments") or shlex.split(entry["command"])
        for path in include_paths(arguments, entry["directory"]):
            inside = os.path.relpath(os.path.realpath(path), source_dir)
            if inside.split(os.sep)[0] in FORBIDDEN[layer]:
                violations.append(f"{source}: -I {inside}")
    if checked == 0:
        sys.exit("layers_test: no compile of base/, loader/ or plugins/ in " + sys.argv[1])
    for violation in sorted(set(violations)):
        print("layers_test: include path across the layers:", violation)
    print(f"layers_test: {checked} compiles checked, {len(set(violations))} crossings")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
