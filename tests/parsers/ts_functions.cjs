// Reference listing with the TypeScript compiler API (npm `typescript`), for comparison with
// `fault_list_function_names` and `fault_extract_code_block`.
//
// Usage: NODE_PATH=<dir with typescript> node ts_functions.cjs FILE...
// Prints one JSON object: {file: [[name, kind, start_line, end_line, start_byte, end_byte], ...]} for the
// definitions js_functions.cjs lists (function declarations, class and object-literal methods and accessors,
// constructors, class fields, variables and assignments holding a function or arrow function), plus what has
// no body: overload signatures, abstract methods, `declare`d functions and methods of `declare`d classes.
// `kind` is "signature" for those, "body" otherwise. A definition spans its node from its first token
// (decorators, `export`, `declare` and other modifiers included, JSDoc excluded) to its end; bytes are UTF-8.
"use strict";
const fs = require("fs");
const ts = require("typescript");

function unwrap(node) {
  while (node && node.kind === ts.SyntaxKind.ParenthesizedExpression) node = node.expression;
  return node;
}

const isFunctionValue = (node) => {
  node = unwrap(node);
  return node && (ts.isFunctionExpression(node) || ts.isArrowFunction(node));
};

function keyName(name) {
  if (!name) return null;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) return name.text;
  if (ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name)) {
    return name.text;
  }
  return null;
}

// UTF-16 index → UTF-8 byte offset, for every index of `text`.
function byteOffsets(text) {
  const offsets = new Uint32Array(text.length + 1);
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    offsets[i] = bytes;
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code < 0xdc00) {
      offsets[i + 1] = bytes;
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  offsets[text.length] = bytes;
  return offsets;
}

function functions(path, source) {
  const kind = path.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true, kind);
  const bytes = byteOffsets(source);
  const found = [];
  const add = (name, node, hasBody) => {
    if (name === null) return;
    const start = node.getStart(file);
    const end = node.end;
    found.push([
      name,
      hasBody ? "body" : "signature",
      file.getLineAndCharacterOfPosition(start).line + 1,
      file.getLineAndCharacterOfPosition(end).line + 1,
      bytes[start],
      bytes[end],
    ]);
  };
  const visit = (node) => {
    const parent = node.parent;
    if (ts.isFunctionDeclaration(node)) {
      if (node.name) add(node.name.text, node, !!node.body);
    } else if (
      ts.isMethodDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node)
    ) {
      // Class members and object-literal members; interface members are MethodSignatures, not listed.
      add(keyName(node.name), node, !!node.body);
    } else if (ts.isConstructorDeclaration(node)) {
      add("constructor", node, !!node.body);
    } else if (ts.isPropertyDeclaration(node)) {
      if (isFunctionValue(node.initializer)) add(keyName(node.name), node, true);
    } else if (ts.isPropertyAssignment(node)) {
      if (ts.isObjectLiteralExpression(parent) && isFunctionValue(node.initializer)) {
        add(keyName(node.name), node, true);
      }
    } else if (ts.isVariableStatement(node)) {
      for (const declaration of node.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name) && isFunctionValue(declaration.initializer)) {
          add(declaration.name.text, node, true);
        }
      }
    } else if (ts.isExpressionStatement(node)) {
      // `a = b.c = function () {}`: every name of a chain of assignments holds the function.
      const assigned = [];
      let value = node.expression;
      while (ts.isBinaryExpression(value) && value.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
        assigned.push(value.left);
        value = value.right;
      }
      if (isFunctionValue(value)) {
        for (const left of assigned) {
          if (ts.isIdentifier(left)) add(left.text, node, true);
          else if (ts.isPropertyAccessExpression(left) && ts.isIdentifier(left.name)) add(left.name.text, node, true);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

const result = {};
for (const path of process.argv.slice(2)) {
  result[path] = functions(path, fs.readFileSync(path, "utf8"));
}
process.stdout.write(JSON.stringify(result));
