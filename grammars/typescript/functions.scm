; TypeScript (.ts .mts .cts, and .tsx read with the TSX grammar): everything JavaScript lists (function
; declarations, class methods, class fields and variables holding a function or arrow function, assignments,
; object-literal methods), plus what has no body: overload signatures of functions and methods, abstract methods
; and `declare`d functions, listed as `signature`. Interface and type-literal members are types, not listed.
; An `export` or `declare` in front of a declaration belongs to its definition; decorators above a class member
; belong to it.

; Written for a fast compilation: tree-sitter analyses every place a named parent node may occur when it compiles
; a query (260 ms for these patterns with TypeScript's grammar, when every function value named its body). So a
; function value is `(function_expression) @function` (its body is its `body` field), and where they stand an
; assignment is `(_ left: … "=" right: …)` (an augmented assignment's operator is no `=`, a binary expression's
; neither, and a destructuring default cannot stand there), a parenthesized value `(_ "(" … ")")` and a member
; `(_ object: … "." property: …)`: the same nodes, matched without that analysis.

(function_declaration
  name: (identifier) @name
  body: (statement_block) @body
  (#set! kind "function")) @definition

(generator_function_declaration
  name: (identifier) @name
  body: (statement_block) @body
  (#set! kind "function")) @definition

; `function f(x: string): void;` (an overload) and, inside `declare`, ambient functions.
(function_signature
  name: (identifier) @name) @definition

(export_statement
  declaration: [
    (function_declaration name: (identifier) @name body: (statement_block) @body)
    (generator_function_declaration name: (identifier) @name body: (statement_block) @body)
    (function_signature name: (identifier) @name)
  ]
  (#set! kind "function")) @definition

(ambient_declaration
  (function_signature name: (identifier) @name)) @definition

(export_statement
  declaration: (ambient_declaration
    (function_signature name: (identifier) @name))) @definition

; Class and object-literal methods: `foo() {}`, `get x() {}`, `static async *gen() {}`, `#secret() {}`.
(method_definition
  name: [(property_identifier) (private_property_identifier) (string) (number)] @name
  body: (statement_block) @body
  (#set! kind "method")) @definition

; Overload signatures of class methods, and abstract methods.
(class_body
  (method_signature
    name: [(property_identifier) (private_property_identifier) (string) (number)] @name) @definition)

(abstract_method_signature
  name: [(property_identifier) (private_property_identifier) (string) (number)] @name) @definition

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
    ])
  (#set! kind "function")) @definition

(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [
      (function_expression) @function
      (arrow_function) @function
      (generator_function) @function
      (_ "(" (function_expression) @function ")")
      (_ "(" (arrow_function) @function ")")
    ])
  (#set! kind "function")) @definition

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
      ]))
  (#set! kind "function")) @definition

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
      ]))
  (#set! kind "function")) @definition

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

; Class fields holding a function: `handle = () => {}`, `private static make = function () {}`.
(public_field_definition
  name: [(property_identifier) (private_property_identifier) (string) (number)] @name
  value: [
    (function_expression) @function
    (arrow_function) @function
    (generator_function) @function
    (_ "(" (function_expression) @function ")")
    (_ "(" (arrow_function) @function ")")
  ]) @definition

; Decorators written above a class member belong to it.
(class_body (decorator) @attached)

; The `;` after a class member's signature or field is part of it (a method body's is not).
(class_body
  [(method_signature) (abstract_method_signature) (public_field_definition)] @terminated
  .
  ";" @terminator)
