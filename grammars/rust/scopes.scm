; Rust: impl blocks (named by their self type) and traits qualify their functions (`Type::method`).

(impl_item
  type: [
    (type_identifier) @scope.name
    (generic_type type: (type_identifier) @scope.name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @scope.name))
    (scoped_type_identifier name: (type_identifier) @scope.name)
    (primitive_type) @scope.name
    (reference_type type: (type_identifier) @scope.name)
  ]) @scope

(trait_item
  name: (type_identifier) @scope.name) @scope

; Any other self type (tuples, slices, trait objects): its text.
(impl_item
  type: (_) @scope.name) @scope
