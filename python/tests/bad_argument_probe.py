"""Calls every function, constructor and method that phynexus._phynexus exports with None,
then with an object of a wrong type, in each parameter position in turn, the others given
valid values, and prints one line per call: "CALL <what>" before it and "-> ok" or
"-> raised <exception class>: <message>" after it. Run by test_bad_arguments.py in a
subprocess, which reads the lines: a call that crashes the interpreter is the last CALL
printed. The parameter types come from the signatures pybind11 writes into each
docstring; a type this file does not know ends the probe with an error, so that a new
binding taking a new type is probed too once it is added below."""

import re
import sys

import numpy as np

from phynexus import _phynexus as ext

WRONG = object()  # an object of no type any binding takes


class Probe:
    def __init__(self):
        self.context = ext.Context()
        self.tensor = ext.Tensor.empty(self.context, 0, 1, [2])  # f32 on the CPU device
        self.stream = ext.Stream(self.context, 0)
        self.event = self.stream.record_event()
        self.graph = ext.Graph(self.context)
        self.executable = self.small_executable()
        self.communicator = ext.Communicator(self.context, [0], 1000)
        self.calls = 0

    def small_executable(self):
        graph = ext.Graph(self.context)
        x = graph.add_input("x", 1, [2])
        relu = next(op["id"] for op in ext.op_table() if op["name"] == "relu")
        (y,) = graph.add_node("relu", relu, None, [x], [], 1)
        graph.add_output(y, "y")
        return graph.compile(0, 0, [], 0, [], 0)

    def value(self, type_name):
        """A valid argument of the type pybind11 names, made anew for each call."""
        if type_name.startswith("Optional["):
            return None
        if type_name.startswith("List[phynexus._phynexus.Tensor"):
            return [self.tensor]
        if type_name.startswith("List[") or type_name.startswith("Sequence["):
            return []
        if type_name.startswith("Dict["):
            return {}
        simple = {
            "phynexus._phynexus.Context": self.context,
            "phynexus._phynexus.Tensor": self.tensor,
            "phynexus._phynexus.Stream": self.stream,
            "phynexus._phynexus.Event": self.event,
            "phynexus._phynexus.Graph": self.graph,
            "phynexus._phynexus.Executable": self.executable,
            "phynexus._phynexus.Communicator": self.communicator,
            "int": 0,
            "float": 0.0,
            "bool": False,
            "str": "probe",
            "bytes": b"",
            "object": None,
            "buffer": np.zeros(2, np.float32),
            "dtype": np.dtype(np.float32),
        }
        if type_name in simple:
            return simple[type_name]
        if type_name == "capsule":
            return ext.to_dlpack(ext.Tensor.empty(self.context, 0, 1, [2]))
        raise SystemExit(f"bad_argument_probe: no value for the type {type_name!r}")

    def call(self, what, function, args):
        self.calls += 1
        print(f"CALL {what}", flush=True)
        try:
            function(*args)
            print("-> ok", flush=True)
        except Exception as error:  # what is probed: any exception, never a crash
            message = str(error).replace("\n", " ")[:200]
            print(f"-> raised {type(error).__name__}: {message}", flush=True)

    def probe(self, what, function, types, skip_first):
        """Each position of types (the first one left out of the call when skip_first: a
        constructor's self) given None, then WRONG, the others valid."""
        first = 1 if skip_first else 0
        for position in range(first, len(types)):
            for bad, bad_name in ((None, "None"), (WRONG, "a wrong type")):
                args = [bad if i == position else self.value(t)
                        for i, t in enumerate(types) if i >= first]
                self.call(f"{what} with {bad_name} as argument {position}: {types[position]}",
                          function, args)


def split_parameters(text):
    """The parameters of "a: T, b: U = 1" split at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for c in text:
        depth += c in "[("
        depth -= c in "])"
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
    if current.strip():
        parts.append(current)
    return parts


SIGNATURE = re.compile(r"^(?:\d+\. )?(\w+)\((.*)\) -> ")


def signatures(function):
    """The parameter types of each overload of a pybind11 function, from its docstring."""
    out = []
    for line in (function.__doc__ or "").splitlines():
        match = SIGNATURE.match(line.strip())
        if match:
            params = split_parameters(match.group(2))
            out.append([p.split(":", 1)[1].split("=", 1)[0].strip() for p in params])
    return out


def is_binding(function):
    return type(function).__name__ in ("builtin_function_or_method", "instancemethod")


def main():
    probe = Probe()
    for name in sorted(dir(ext)):
        item = getattr(ext, name)
        if isinstance(item, type) and issubclass(item, BaseException):
            continue
        if isinstance(item, type):
            for types in signatures(item.__init__):
                probe.probe(f"{name}()", item, types, skip_first=True)
            for member in sorted(vars(item)):
                function = getattr(item, member)
                # A property's getter, given the object (the package's Python properties
                # added to the classes are not the extension's).
                if isinstance(function, property) and is_binding(function.fget):
                    probe.probe(f"{name}.{member} (getter)", function.fget,
                                [f"phynexus._phynexus.{name}"], skip_first=False)
                    continue
                if member.startswith("__") or not is_binding(function):
                    continue
                for types in signatures(function):
                    probe.probe(f"{name}.{member}", function, types, skip_first=False)
        elif callable(item) and is_binding(item):
            for types in signatures(item):
                probe.probe(name, item, types, skip_first=False)
    print(f"PROBED {probe.calls} calls", flush=True)


if __name__ == "__main__":
    sys.exit(main())
