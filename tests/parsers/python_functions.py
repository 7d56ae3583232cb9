"""Reference listing with Python's own parser (`ast`), for comparison with `fault_list_function_names`.

Usage: python3 python_functions.py FILE...
Prints one JSON object: {file: [[qualified_name, kind, start_line, end_line], ...]} where a function is every
`def`/`async def` at any depth (lambdas are expressions, not definitions), qualified by its enclosing classes
and functions (`Class.method.inner`), starting at its first decorator.
"""
import ast
import json
import sys


def functions(tree):
    found = []

    def visit(node, scope, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                kind = "method" if in_class else "function"
                found.append([".".join(scope + [child.name]), kind, start, child.end_lineno])
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
        result[path] = functions(ast.parse(source, filename=path))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
