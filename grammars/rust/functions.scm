; Rust: every `fn` item at any depth (free functions, impl methods, trait methods with a default body, nested
; fns); trait and extern signatures without a body are listed with kind `signature`.
; Outer attributes right before an item (`#[test]`, `#[inline]`) belong to its definition.

(function_item
  name: (identifier) @name
  body: (block) @body) @definition

(function_signature_item
  name: (identifier) @name) @definition

((attribute_item)+ @attribute
  .
  (function_item
    name: (identifier) @name
    body: (block) @body) @definition)

((attribute_item)+ @attribute
  .
  (function_signature_item
    name: (identifier) @name) @definition)
