#!/usr/bin/env python3
"""Compares the public types of two abidw dumps member by member (tests/abi/abi_check.sh).

abidiff 2.2 with a `has_data_member_inserted_at = end` suppression also hides a member
whose type changed, as long as the struct did not shrink, and every change below such a
struct. This check closes that gap: for every phx_ struct, enum and typedef of the
baseline, the current dump must have
  - a struct of the suppression list: the baseline's members as its first members, at the
    same offsets with the same types, and no smaller size;
  - any other struct: the same members and the same size;
  - an enum: every enumerator of the baseline with the same value (more may follow);
  - a typedef: the same type.
Member and typedef types are compared by what they spell ("int", "struct phx_x*",
"const char*"), never by abidw's hashed type ids: two names whose hashes collide (int and
long int do) get ids that differ in the last digit, in the order the build's debug info
happens to meet them, so the same type can carry another id in another build. Every named
type's layout is checked on its own entry.

usage: abi_types_check.py <baseline.abi.xml> <current.abi.xml> <suppressions>
Prints each difference and exits 1 if there is any.
"""
import re
import sys
import xml.etree.ElementTree as ET


def appendable_structs(suppressions_path):
    """The name_regexp of the suppressions' has_data_member_inserted_at sections."""
    patterns = []
    with open(suppressions_path, encoding="utf-8") as f:
        sections = re.split(r"^\s*\[", f.read(), flags=re.M)
    for section in sections:
        if "has_data_member_inserted_at" in section:
            match = re.search(r"^\s*name_regexp\s*=\s*(\S+)", section, flags=re.M)
            if match:
                patterns.append(re.compile(match.group(1)))
    return patterns


def type_spellings(root):
    """type id -> the type as C spells it, for every type of a dump."""
    elements = {e.get("id"): e for e in root.iter() if e.get("id")}
    spellings = {}

    def spell(type_id, depth=0):
        if type_id in spellings:
            return spellings[type_id]
        element = elements.get(type_id)
        if element is None or depth > 32:
            return f"<unknown {type_id}>"
        tag = element.tag
        if tag in ("type-decl", "typedef-decl"):
            text = element.get("name")
        elif tag == "class-decl":
            text = ("struct " if element.get("is-struct") == "yes" else "class ") + \
                element.get("name", "")
        elif tag in ("union-decl", "enum-decl"):
            text = tag.split("-")[0] + " " + element.get("name", "")
        elif tag == "pointer-type-def":
            text = spell(element.get("type-id"), depth + 1) + "*"
        elif tag == "reference-type-def":
            text = spell(element.get("type-id"), depth + 1) + "&"
        elif tag == "qualified-type-def":
            qualifiers = [q for q in ("const", "volatile", "restrict") if element.get(q) == "yes"]
            text = " ".join(qualifiers + [spell(element.get("type-id"), depth + 1)])
        elif tag == "array-type-def":
            lengths = "".join(f"[{r.get('length')}]" for r in element.findall("subrange"))
            text = spell(element.get("type-id"), depth + 1) + lengths
        elif tag == "function-type":
            parameters = [spell(p.get("type-id"), depth + 1) if p.get("type-id") else "..."
                          for p in element.findall("parameter")]
            returned = element.find("return")
            text = (spell(returned.get("type-id"), depth + 1) if returned is not None
                    else "void") + "(" + ", ".join(parameters) + ")"
        else:
            text = f"<{tag}>"
        spellings[type_id] = text
        return text

    return spell


def public_types(path):
    """name -> (kind, description) for every phx_ struct, enum and typedef of a dump."""
    types = {}
    root = ET.parse(path).getroot()
    spell = type_spellings(root)
    for element in root.iter():
        name = element.get("name", "")
        if not name.startswith("phx_"):
            continue
        if element.tag == "class-decl" and element.get("is-declaration-only") != "yes":
            members = [(m.get("layout-offset-in-bits"), m.find("var-decl").get("name"),
                        spell(m.find("var-decl").get("type-id")))
                       for m in element.findall("data-member")]
            description = (int(element.get("size-in-bits", "0")), members)
        elif element.tag == "enum-decl":
            description = {e.get("name"): e.get("value") for e in element.findall("enumerator")}
        elif element.tag == "typedef-decl":
            description = spell(element.get("type-id"))
        else:
            continue
        # One translation unit may hold a declaration only; keep the fullest entry.
        previous = types.get(name)
        if previous is None or (element.tag == "class-decl" and
                                len(description[1]) > len(previous[1][1])):
            types[name] = (element.tag, description)
    return types


def main():
    baseline_path, current_path, suppressions_path = sys.argv[1:4]
    appendable = appendable_structs(suppressions_path)
    baseline = public_types(baseline_path)
    current = public_types(current_path)
    problems = []
    for name, (kind, old) in sorted(baseline.items()):
        if name not in current or current[name][0] != kind:
            problems.append(f"{kind} {name}: removed")
            continue
        new = current[name][1]
        if kind == "class-decl":
            old_size, old_members = old
            new_size, new_members = new
            if any(p.search(name) for p in appendable):
                if new_members[:len(old_members)] != old_members or new_size < old_size:
                    problems.append(f"struct {name}: its {len(old_members)} members of the "
                                    f"baseline changed:\n    was {old_members}\n    now "
                                    f"{new_members[:len(old_members)]}")
            elif new != old:
                problems.append(f"struct {name}: changed (size {old_size} -> {new_size} bits,"
                                f" members {old_members} -> {new_members})")
        elif kind == "enum-decl":
            for enumerator, value in old.items():
                if new.get(enumerator) != value:
                    problems.append(f"enum {name}: {enumerator} was {value}, now "
                                    f"{new.get(enumerator, 'removed')}")
        elif new != old:
            problems.append(f"typedef {name}: now names another type")
    for problem in problems:
        print(f"abi_types_check: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
