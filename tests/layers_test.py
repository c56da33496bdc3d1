#!/usr/bin/env python3
"""The layers' include arrows, read from the build's compile commands.

usage: layers_test.py COMPILE_COMMANDS_JSON SOURCE_DIR

docs/architecture.md draws the layers: base/ (env, error, progress, the op table, the host
kernels) is used by core/ (libphynexus), the loader and the plugins; plugins/ and loader/
never include anything under core/, and base/ nothing under core/, loader/ or plugins/.
Within core/, the trace writer (core/trace/) is a leaf that the runtime hands plain
records: it includes nothing of the core's other folders.
Every compile of a source in one of those folders is checked: no include path (-I,
-isystem, -iquote) may point into a folder its layer must not see. And every file in
them (headers too) is read: no #include may name a file in such a folder, whether found
beside the file (a relative path) or on its layer's include path. Exits 1 naming each
source and path that does.
"""
import json
import os
import re
import shlex
import sys

# Each layer's folder and the folders its files must not reach; a layer's own folder is
# always in reach, even inside a folder it must not reach (core/trace inside core).
FORBIDDEN = {
    "plugins": ["core"],
    "loader": ["core", "plugins"],
    "base": ["core", "loader", "plugins"],
    os.path.join("core", "trace"): ["core", "loader", "plugins"],
}
SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def inside(path, folder):
    """Whether path (relative to the source tree) lies in folder."""
    return path == folder or path.startswith(folder + os.sep)


def layer_of(path):
    """The layer whose folder holds path (the deepest), or None."""
    layers = [layer for layer in FORBIDDEN if inside(path, layer)]
    return max(layers, key=len) if layers else None


def forbidden(layer, path):
    """Whether a file of layer must not reach path (relative to the source tree)."""
    return not inside(path, layer) and any(inside(path, f) for f in FORBIDDEN[layer])


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


def included_files(source_dir, layer, search_paths):
    """(file, included file) for each #include in layer's folder that names a file of
    the tree: found beside the including file, else on search_paths, as a compiler would
    (both relative to the source tree)."""
    found = []
    for folder, _, names in os.walk(os.path.join(source_dir, layer)):
        for name in sorted(names):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(folder, name)
            with open(path, errors="replace") as file:
                text = file.read()
            for included in INCLUDE.findall(text):
                for directory in [folder] + search_paths:
                    candidate = os.path.realpath(os.path.join(directory, included))
                    if os.path.isfile(candidate):
                        found.append((os.path.relpath(path, source_dir),
                                      os.path.relpath(candidate, source_dir)))
                        break
    return found


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as file:
        commands = json.load(file)
    source_dir = os.path.realpath(sys.argv[2])
    checked, violations = 0, []
    search_paths = {layer: [] for layer in FORBIDDEN}
    for entry in commands:
        source = os.path.relpath(os.path.realpath(entry["file"]), source_dir)
        layer = layer_of(source)
        if layer is None:
            continue
        checked += 1
        arguments = entry.get("arguments") or shlex.split(entry["command"])
        for path in include_paths(arguments, entry["directory"]):
            if path not in search_paths[layer]:
                search_paths[layer].append(path)
            reached = os.path.relpath(os.path.realpath(path), source_dir)
            if forbidden(layer, reached):
                violations.append(f"{source}: -I {reached}")
    if checked == 0:
        sys.exit("layers_test: no compile of base/, loader/ or plugins/ in " + sys.argv[1])
    for layer, paths in search_paths.items():
        for source, included in included_files(source_dir, layer, paths):
            if forbidden(layer, included):
                violations.append(f"{source}: #include {included}")
    for violation in sorted(set(violations)):
        print("layers_test: include across the layers:", violation)
    print(f"layers_test: {checked} compiles checked, {len(set(violations))} crossings")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
