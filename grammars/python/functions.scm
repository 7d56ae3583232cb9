; Python: every `def` and `async def` at any depth (functions, methods, nested functions); lambdas are not listed.
; A decorated function's definition starts at its first decorator.

(function_definition
  name: (identifier) @name
  body: (block) @body) @definition

(decorated_definition
  definition: (function_definition
    name: (identifier) @name
    body: (block) @body)) @definition
