"""Reference listing with Python's own parser (`ast`), for comparison with `fault_list_function_names`.

Usage: python3 python_functions.py FILE...
Prints one JSON object: {file: [[qualified_name, kind, start_line, end_line, start_byte, end_byte], ...]} where a
function is every `def`/`async def` at any depth (lambdas are expressions, not definitions), qualified by its
enclosing classes and functions (`Class.method.inner`), starting at its first decorator's `@`.
"""
import ast
import json
import sys


def functions(tree, source):
    found = []
    line_starts = [0]
    for line in source.split(b"\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)

    def offset(line, column):
        return line_starts[line - 1] + column

    def start_of(function):
        if not function.decorator_list:
            return offset(function.lineno, function.col_offset)
        first = min(function.decorator_list, key=lambda d: (d.lineno, d.col_offset))
        # The decorator's expression starts after its `@` (and any blanks).
        at = source.rindex(b"@", 0, offset(first.lineno, first.col_offset))
        return at

    def visit(node, scope, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                kind = "method" if in_class else "function"
                found.append([
                    ".".join(scope + [child.name]),
                    kind,
                    start,
                    child.end_lineno,
                    start_of(child),
                    offset(child.end_lineno, child.end_col_offset),
                ])
                visit(child, scope + [child.name], False)
            elif isinstance(child, ast.ClassDef):
                visit(child, scope + [child.name], True)
            else:
                # Statements such as `if`/`try` inside a class body keep the class as the owner.
                visit(child, scope, in_class)

    visit(tree, [], False)
    return found


def main(paths):
    result = {}
    for path in paths:
        with open(path, "rb") as handle:
            source = handle.read()
        result[path] = functions(ast.parse(source, filename=path), source)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
