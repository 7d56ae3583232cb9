; Python: classes qualify the functions defined in them (`Class.method`).

(class_definition
  name: (identifier) @scope.name) @scope
