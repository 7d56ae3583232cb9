// Reference listing with Go's own parser (go/ast), for comparison with `fault_list_function_names`.
//
// Usage: go run ./tests/parsers/go_functions FILE...
// Prints one JSON object: {file: [[qualified_name, kind, start_line, end_line, start_byte, end_byte], ...]} with
// every function and method declaration (methods qualified by their receiver type, `Type.Method`; no body =
// "signature"). A declaration starts at its doc comment (FuncDecl.Doc) when it has one.
package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
)

func receiverType(expr ast.Expr) string {
	switch t := expr.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.ParenExpr:
		return receiverType(t.X)
	}
	return "?"
}

func main() {
	result := map[string][][]any{}
	for _, path := range os.Args[1:] {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		found := [][]any{}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name, kind := fn.Name.Name, "function"
			if fn.Recv != nil && len(fn.Recv.List) > 0 {
				name = receiverType(fn.Recv.List[0].Type) + "." + name
				kind = "method"
			}
			if fn.Body == nil {
				kind = "signature"
			}
			start := fn.Pos()
			if fn.Doc != nil {
				start = fn.Doc.Pos()
			}
			begin, end := fset.Position(start), fset.Position(fn.End())
			found = append(found, []any{name, kind, begin.Line, end.Line, begin.Offset, end.Offset})
		}
		result[path] = found
	}
	json.NewEncoder(os.Stdout).Encode(result)
}
