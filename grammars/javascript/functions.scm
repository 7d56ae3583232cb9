; JavaScript (.js .mjs .cjs .jsx): function declarations (async and generators too), class methods (getters,
; setters, static, private), class fields holding a function, functions and arrow functions assigned to a
; variable or a member (`exports.foo = function`, `Foo.prototype.bar = function`), object-literal methods.
; Anonymous functions passed as arguments (callbacks) have no name and are not listed. A function value may be
; parenthesized (`var f = (function () {...});`).
; An `export` in front of a declaration belongs to its definition.

; Written for a fast compilation: tree-sitter analyses every place a named parent node may occur when it compiles
; a query (260 ms for these patterns with TypeScript's grammar, when every function value named its body). So a
; function value is `(function_expression) @function` (its body is its `body` field), and where they stand an
; assignment is `(_ left: … "=" right: …)` (an augmented assignment's operator is no `=`, a binary expression's
; neither, and a destructuring default cannot stand there), a parenthesized value `(_ "(" … ")")` and a member
; `(_ object: … "." property: …)`: the same nodes, matched without that analysis.

(function_declaration
  name: (identifier) @name
  body: (statement_block) @body) @definition

(generator_function_declaration
  name: (identifier) @name
  body: (statement_block) @body) @definition

(export_statement
  declaration: [
    (function_declaration name: (identifier) @name body: (statement_block) @body)
    (generator_function_declaration name: (identifier) @name body: (statement_block) @body)
  ]) @definition

; Class and object-literal methods: `foo() {}`, `get x() {}`, `static async *gen() {}`, `#secret() {}`.
(method_definition
  name: [(property_identifier) (private_property_identifier) (string) (number)] @name
  body: (statement_block) @body
  (#set! kind "method")) @definition

; `const foo = function () {}`, `let bar = async () => x`, `var gen = function* () {}`.
(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [
      (function_expression) @function
      (arrow_function) @function
      (generator_function) @function
      (_ "(" (function_expression) @function ")")
      (_ "(" (arrow_function) @function ")")
    ])) @definition

(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [
      (function_expression) @function
      (arrow_function) @function
      (generator_function) @function
      (_ "(" (function_expression) @function ")")
      (_ "(" (arrow_function) @function ")")
    ])) @definition

(export_statement
  declaration: (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: [
        (function_expression) @function
        (arrow_function) @function
        (generator_function) @function
        (_ "(" (function_expression) @function ")")
        (_ "(" (arrow_function) @function ")")
      ]))) @definition

(export_statement
  declaration: (variable_declaration
    (variable_declarator
      name: (identifier) @name
      value: [
        (function_expression) @function
        (arrow_function) @function
        (generator_function) @function
        (_ "(" (function_expression) @function ")")
        (_ "(" (arrow_function) @function ")")
      ]))) @definition

; `foo = function () {}` (no declaration keyword).
(expression_statement
  (_
    left: (identifier) @name
    "="
    right: [
      (function_expression) @function
      (arrow_function) @function
      (generator_function) @function
      (_ "(" (function_expression) @function ")")
      (_ "(" (arrow_function) @function ")")
    ])) @definition

; `Foo.prototype.bar = function` defines a method of Foo.
(expression_statement
  (_
    left: (member_expression
      object: (member_expression
        object: (_) @qualifier
        property: (property_identifier) @prototype)
      property: (property_identifier) @name)
    "="
    right: [
      (function_expression) @function
      (arrow_function) @function
      (generator_function) @function
      (_ "(" (function_expression) @function ")")
      (_ "(" (arrow_function) @function ")")
    ])
  (#eq? @prototype "prototype")
  (#set! kind "method")) @definition

; `exports.foo = function`, `module.exports.foo = () => {}`, `Foo.bar = function` (static-like).
(expression_statement
  (_
    left: (member_expression
      object: (_) @qualifier
      property: (property_identifier) @name)
    "="
    right: [
      (function_expression) @function
      (arrow_function) @function
      (generator_function) @function
      (_ "(" (function_expression) @function ")")
      (_ "(" (arrow_function) @function ")")
    ])) @definition

; A chain of assignments ending in a function defines every name it assigns, each spanning the whole statement:
; `res.contentType = res.type = function contentType(type) {}` lists `res.contentType` and `res.type`. Chains of
; up to three assignments: the first name, the second, the third.
(expression_statement
  (_
    left: [
      (identifier) @name
      (_ object: (_) @qualifier "." property: (property_identifier) @name)
    ]
    "="
    right: (_
      "="
      right: [
        (function_expression) @function
        (arrow_function) @function
        (generator_function) @function
        (_ "(" (function_expression) @function ")")
        (_ "(" (arrow_function) @function ")")
        (_
          "="
          right: [
            (function_expression) @function
            (arrow_function) @function
            (generator_function) @function
            (_ "(" (function_expression) @function ")")
            (_ "(" (arrow_function) @function ")")
          ])
      ]))) @definition

(expression_statement
  (_
    "="
    right: (_
      left: [
        (identifier) @name
        (_ object: (_) @qualifier "." property: (property_identifier) @name)
      ]
      "="
      right: [
        (function_expression) @function
        (arrow_function) @function
        (generator_function) @function
        (_ "(" (function_expression) @function ")")
        (_ "(" (arrow_function) @function ")")
        (_
          "="
          right: [
            (function_expression) @function
            (arrow_function) @function
            (generator_function) @function
            (_ "(" (function_expression) @function ")")
            (_ "(" (arrow_function) @function ")")
          ])
      ]))) @definition

(expression_statement
  (_
    "="
    right: (_
      "="
      right: (_
        left: [
          (identifier) @name
          (_ object: (_) @qualifier "." property: (property_identifier) @name)
        ]
        "="
        right: [
          (function_expression) @function
          (arrow_function) @function
          (generator_function) @function
          (_ "(" (function_expression) @function ")")
          (_ "(" (arrow_function) @function ")")
        ])))) @definition

; Object-literal entries holding a function: `{ foo: function () {}, bar: () => 1 }`.
(pair
  key: [(property_identifier) (string) (number)] @name
  value: [
    (function_expression) @function
    (arrow_function) @function
    (generator_function) @function
    (_ "(" (function_expression) @function ")")
    (_ "(" (arrow_function) @function ")")
  ]) @definition

; Class fields holding a function: `handle = () => {}`, `static make = function () {}`.
(field_definition
  property: [(property_identifier) (private_property_identifier) (string) (number)] @name
  value: [
    (function_expression) @function
    (arrow_function) @function
    (generator_function) @function
    (_ "(" (function_expression) @function ")")
    (_ "(" (arrow_function) @function ")")
  ]) @definition
