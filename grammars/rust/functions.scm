; Rust: every `fn` item at any depth (free functions, impl methods, trait methods with a default body, nested
; fns); trait and extern signatures without a body are listed with kind `signature`.
; `definition.contains`: a word every definition holds; the search does not enter code without "fn".

(function_item
  name: (identifier) @name
  body: (block) @body
  (#set! definition.contains "fn")) @definition

(function_signature_item
  name: (identifier) @name
  (#set! definition.contains "fn")) @definition

; What Rust attaches to the item that follows: outer attributes and outer doc comments (`///`, `/** */`, which
; are `#[doc]` attributes), in source order from the first one. Other comments between them are kept.
(attribute_item) @attached
(line_comment outer: (outer_doc_comment_marker)) @attached
(block_comment outer: (outer_doc_comment_marker)) @attached
