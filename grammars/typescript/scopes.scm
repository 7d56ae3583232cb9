; TypeScript: classes (abstract too), object literals bound to a name and namespaces qualify the functions
; defined in them (`Class.method`, `Namespace.fn`).

(class_declaration
  name: (type_identifier) @scope.name) @scope

(abstract_class_declaration
  name: (type_identifier) @scope.name) @scope

(class
  name: (type_identifier) @scope.name) @scope

(internal_module
  name: (_) @scope.name) @scope

(module
  name: (_) @scope.name) @scope

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
