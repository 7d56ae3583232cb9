; JavaScript: classes and object literals bound to a name qualify the methods defined in them (`Class.method`).

(class_declaration
  name: (identifier) @scope.name) @scope

(class
  name: (identifier) @scope.name) @scope

(variable_declarator
  name: (identifier) @scope.name
  value: (class) @scope)

(variable_declarator
  name: (identifier) @scope.name
  value: (object) @scope)

(assignment_expression
  left: (_) @scope.name
  right: (object) @scope)

(assignment_expression
  left: (_) @scope.name
  right: (class) @scope)

(pair
  key: (property_identifier) @scope.name
  value: (object) @scope)
