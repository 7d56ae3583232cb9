// Reference listing with acorn (a standard-conforming JavaScript parser), for comparison with
// `fault_list_function_names`.
//
// Usage: NODE_PATH=<dir with acorn and acorn-walk> node js_functions.cjs FILE...
// Prints one JSON object: {file: [[name, start_line, end_line, start_byte, end_byte], ...]} for: function declarations (async and
// generators too), class methods (getters, setters, static, private), class fields holding a function,
// variables and assignments (`x = ...`, `exports.foo = ...`, `Foo.prototype.bar = ...`, each name of a chain
// `a = b.c = ...`) holding a function
// or arrow function, object-literal methods and entries holding a function. Lines are those of the whole
// definition (the `export`, declaration or statement around the function); bytes are UTF-8 offsets.
"use strict";
const fs = require("fs");
const acorn = require("acorn");
const walk = require("acorn-walk");

const isFunctionValue = (node) =>
  node && (node.type === "FunctionExpression" || node.type === "ArrowFunctionExpression");

function keyName(key, computed) {
  if (computed) return null;
  if (key.type === "Identifier") return key.name;
  if (key.type === "PrivateIdentifier") return "#" + key.name;
  if (key.type === "Literal") return String(key.value);
  return null;
}

function parse(source) {
  const options = { ecmaVersion: "latest", locations: true, allowHashBang: true, allowReturnOutsideFunction: true };
  try {
    return acorn.parse(source, { ...options, sourceType: "module" });
  } catch (moduleError) {
    return acorn.parse(source, { ...options, sourceType: "script" });
  }
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

function functions(source) {
  const found = [];
  const bytes = byteOffsets(source);
  const add = (name, node) => {
    if (name !== null) {
      found.push([name, node.loc.start.line, node.loc.end.line, bytes[node.start], bytes[node.end]]);
    }
  };
  walk.fullAncestor(parse(source), (node, _state, ancestors) => {
    const parent = ancestors[ancestors.length - 2];
    const exported = parent && (parent.type === "ExportNamedDeclaration" || parent.type === "ExportDefaultDeclaration");
    switch (node.type) {
      case "FunctionDeclaration":
        if (node.id) add(node.id.name, exported ? parent : node);
        break;
      case "MethodDefinition":
        add(keyName(node.key, node.computed), node);
        break;
      case "PropertyDefinition":
        if (isFunctionValue(node.value)) add(keyName(node.key, node.computed), node);
        break;
      case "Property":
        if (parent && parent.type === "ObjectExpression" && isFunctionValue(node.value)) {
          add(keyName(node.key, node.computed), node);
        }
        break;
      case "VariableDeclaration":
        for (const declarator of node.declarations) {
          if (declarator.id.type === "Identifier" && isFunctionValue(declarator.init)) {
            add(declarator.id.name, exported ? parent : node);
          }
        }
        break;
      case "ExpressionStatement": {
        // `a = b.c = function () {}`: every name of a chain of assignments holds the function.
        const assigned = [];
        let value = node.expression;
        while (value.type === "AssignmentExpression" && value.operator === "=") {
          assigned.push(value.left);
          value = value.right;
        }
        if (!isFunctionValue(value)) break;
        for (const left of assigned) {
          if (left.type === "Identifier") add(left.name, node);
          else if (left.type === "MemberExpression" && !left.computed && left.property.type === "Identifier") {
            add(left.property.name, node);
          }
        }
        break;
      }
    }
  });
  return found;
}

const result = {};
for (const path of process.argv.slice(2)) {
  result[path] = functions(fs.readFileSync(path, "utf8"));
}
process.stdout.write(JSON.stringify(result));
