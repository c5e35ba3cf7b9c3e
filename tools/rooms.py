#!/usr/bin/env python3
"""tools/rooms.py: the include graph of provision's rooms, and its circles.

A room is a file name without its extension: provision/state.c and
provision/state.h are the room `state`, provision/cli/cmd.c and cmd.h the
room `cli/cmd`; a module's private header NAME_int.h (plan_int.h: what
plan.c and its plan_*.c rooms share) is NAME's room.  Room A imports room B when a file of A includes B's header
("..." includes only; <...> are the system's).  A circle is a set of rooms
that import each other, directly or through others (a strongly connected
component of more than one room).

  tools/rooms.py [--check] [DIR...]
      print the rooms of each DIR under provision/ ("." for provision/
      itself, "cli" for provision/cli; default: both) with what each
      imports, then the circles of the whole graph.  --check prints only
      the circles and exits 1 when there is one (`make lint`).
"""
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "provision")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(path):
    """The room of a file under provision/: its path without extension, less an _int."""
    rel = os.path.relpath(os.path.splitext(path)[0], TOP)
    return rel[:-4] if rel.endswith("_int") else rel


def rooms():
    """{room: set(imported rooms)} for every .c and .h under provision/."""
    graph = {}
    for dirpath, _, files in os.walk(TOP):
        for name in sorted(files):
            base, ext = os.path.splitext(name)
            if ext not in (".c", ".h"):
                continue
            path = os.path.join(dirpath, name)
            room = room_of(path)
            deps = graph.setdefault(room, set())
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                target = os.path.normpath(os.path.join(dirpath, inc))
                rel = room_of(target)
                if rel.startswith("..") or not os.path.exists(target):
                    continue
                if rel != room:
                    deps.add(rel)
    for deps in list(graph.values()):
        for d in deps:
            graph.setdefault(d, set())
    return graph


def circles(graph):
    """The strongly connected components of more than one room (Tarjan), sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def witness(graph, comp):
    """One circle through the component's first room: 'a -> b -> a'."""
    start, members = comp[0], set(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return " -> ".join(list(reversed(path)) + [start])
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return " -> ".join(comp)


def main(argv):
    check = "--check" in argv
    dirs = [a for a in argv if a != "--check"] or [".", "cli"]
    graph = rooms()
    if not check:
        for d in dirs:
            d = os.path.normpath(d)
            print("rooms of provision/%s:" % ("" if d == "." else d + "/"))
            for room in sorted(graph):
                if os.path.dirname(room) != ("" if d == "." else d):
                    continue
                print("  %-22s -> %s" % (room, ", ".join(sorted(graph[room])) or "-"))
            print()
    found = circles(graph)
    for comp in found:
        print("circle: %s (%s)" % (", ".join(comp), witness(graph, comp)))
    if not found and not check:
        print("no circle")
    return 1 if check and found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
