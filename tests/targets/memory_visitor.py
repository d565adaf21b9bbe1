"""A tree visitor that dispatches with getattr on an f-string name, its tree built and dropped
every round (tests/integration/test_memory_address_keyed.py).

Each round builds a tree of small node objects, walks it with a visitor whose dispatch is
`getattr(self, f"visit_{node.type}", None)`, and drops the tree. The dispatch line allocates two
small objects per call and frees them at once: the name (a fresh str of about 60 bytes, the
f-string's result) and, where the method exists, a bound method. Nothing the program keeps
refers to them.

One thing does: CPython's type attribute cache. It has 4,096 slots; a lookup of a name on a type
fills the slot chosen by the type's version and the name's address, and the slot keeps a
reference to that name until another lookup replaces it. So at exit up to 4,096 of the dispatch
line's names are still alive, about 60 bytes each: under 256 KiB by construction, and which
names survive depends on where the allocator put them. That is the truth to hold the profile to:
the line holds a few tens of KiB at exit, grows by nothing after the first round, and is not a
leak.

`--tracemalloc` runs the same rounds with tracemalloc started first and prints (JSON, the last
line of the output) what the dispatch line still holds at exit, exactly: the measured truth.
"""

import json
import sys

ROUNDS = 60
DEPTH = 6
WIDTH = 4


class Node:
    __slots__ = ("type", "children", "value")

    def __init__(self, type, children=(), value=None):
        self.type = type
        self.children = list(children)
        self.value = value


def build(depth):
    if depth == 0:
        return Node("leaf", value="x")
    kind = "pair" if depth % 2 else "group"
    return Node(kind, [build(depth - 1) for _ in range(WIDTH)])


class Visitor:
    def __init__(self):
        self.leaves = 0

    def visit(self, node):
        visitor = getattr(self, f"visit_{node.type}", None)  # dispatch
        if visitor is None:
            return self.visit_default(node)
        return visitor(node)

    def visit_default(self, node):
        for child in node.children:
            self.visit(child)

    def visit_leaf(self, node):
        self.leaves += 1

    def visit_pair(self, node):
        self.visit_default(node)


def main():
    visitor = Visitor()
    for _ in range(ROUNDS):
        tree = build(DEPTH)
        visitor.visit(tree)
        del tree
    return visitor.leaves


if __name__ == "__main__":
    if "--tracemalloc" in sys.argv[1:]:
        import tracemalloc

        tracemalloc.start()
        leaves = main()
        with open(__file__) as f:
            (number,) = [n for n, text in enumerate(f, 1) if text.rstrip().endswith("# dispatch")]
        held = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(True, __file__, lineno=number)]
        )
        size = sum(stat.size for stat in held.statistics("lineno"))
        print(json.dumps({"leaves": leaves, "line": number, "held_bytes": size}))
    else:
        print(json.dumps({"leaves": main()}))
