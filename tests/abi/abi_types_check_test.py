#!/usr/bin/env python3
"""Checks abi_types_check.py on the committed baseline itself.

abidw names types by hashes, and two names whose hashes collide (int and long int) get ids
that differ in their last digit in whichever order a build meets them: CI once failed on a
baseline whose only difference from its build was that order. The check must pass a dump
whose colliding ids are swapped, and still fail a member whose type really changed.

usage: abi_types_check_test.py <baseline.abi.xml> <suppressions>
"""
import os
import re
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "abi_types_check.py")


def check(baseline, current_text, suppressions):
    with tempfile.NamedTemporaryFile("w", suffix=".abi.xml", delete=False) as current:
        current.write(current_text)
    try:
        return subprocess.run([sys.executable, CHECK, baseline, current.name, suppressions],
                              capture_output=True, text=True)
    finally:
        os.unlink(current.name)


def type_id(text, name):
    match = re.search(rf"<type-decl name='{name}' size-in-bits='\d+' id='([0-9a-f]+)'", text)
    assert match, f"the baseline has no type-decl '{name}'"
    return match.group(1)


def main():
    baseline, suppressions = sys.argv[1:3]
    with open(baseline, encoding="utf-8") as f:
        text = f.read()
    int_id, long_id = type_id(text, "int"), type_id(text, "long int")

    swapped = text.replace(int_id, "@").replace(long_id, int_id).replace("@", long_id)
    result = check(baseline, swapped, suppressions)
    assert result.returncode == 0, f"swapped type ids failed the check:\n{result.stdout}"

    member = re.search(rf"(<var-decl name='\w+' type-id='){int_id}'", text)
    assert member, "the baseline has no int member to change"
    changed = text.replace(member.group(0), member.group(1) + long_id + "'", 1)
    result = check(baseline, changed, suppressions)
    assert result.returncode == 1 and "long int" in result.stdout, \
        f"an int member made long int passed the check:\n{result.stdout}"
    print("abi_types_check_test: swapped ids pass, a changed member type fails")


if __name__ == "__main__":
    main()
