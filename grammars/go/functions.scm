; Go: function and method declarations. A method is qualified by its receiver type (`Type.Method`);
; a declaration without a body (implemented in assembly) is listed as a signature.
; `definition.contains`: a word every definition holds; the search does not enter code without "func".

(function_declaration
  name: (identifier) @name
  body: (block)? @body
  (#set! definition.contains "func")) @definition

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @qualifier
        (pointer_type (type_identifier) @qualifier)
        (generic_type type: (type_identifier) @qualifier)
        (pointer_type (generic_type type: (type_identifier) @qualifier))
      ]))
  name: (field_identifier) @name
  body: (block)? @body
  (#set! kind "method")
  (#set! definition.contains "func")) @definition

; The doc comment of a declaration, as go/ast attaches it to a FuncDecl: the comment group (comments with no
; blank line between them) that ends on the line right above it; a comment ending a line of code is not one.
((comment) @attached
  (#set! attached.adjacent "true")
  (#set! attached.own_line "true"))
