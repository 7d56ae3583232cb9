; Rust: impl blocks and traits qualify their functions (`Type::method`). An impl is named by its self type,
; shortened to its base name (`impl<T> fmt::Display for &'a mut Point<T>` → `Point`).

(impl_item
  type: (_) @scope.name) @scope

(trait_item
  name: (type_identifier) @scope.name) @scope
