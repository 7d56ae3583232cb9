; Python: every `def` and `async def` at any depth (functions, methods, nested functions); lambdas are not listed.
; A decorated function's definition starts at its first decorator.
; `definition.contains`: a word every definition holds; the search does not enter code without "def".

(function_definition
  name: (identifier) @name
  body: (block) @body
  (#set! definition.contains "def")) @definition

(decorated_definition
  definition: (function_definition
    name: (identifier) @name
    body: (block) @body)
  (#set! definition.contains "def")) @definition
