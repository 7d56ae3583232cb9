//! The hygiene phase: each listed tool read the way strict clients read it. OpenAI's strict function calling
//! and Gemini's function declarations take a subset of JSON Schema: every property typed, an object at the
//! root, no `oneOf`/`allOf`/`not`/conditionals, references that resolve. A model picks tools by their
//! descriptions, and clients decide what to retry or confirm by their annotations.

use serde_json::Value;

use super::{
    Phase,
    finding::{Finding, Kind, Severity},
    schema,
};

/// Keywords outside the subset the strict clients accept anywhere below the root.
const UNSUPPORTED: &[&str] = &[
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
];
/// How deep nested schemas are walked.
const MAX_DEPTH: usize = 12;

/// The hygiene findings of one tool of a `tools/list` answer; `reproduce` is the scan's command line for
/// this tool's hygiene.
pub fn check(tool: &Value, reproduce: &str) -> Vec<Finding> {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
    let mut found = Vec::new();
    let mut add = |finding: Finding| {
        found.push(Finding {
            reproduce: reproduce.to_owned(),
            ..finding
        })
    };
    let new = |kind, severity, field: Option<&str>| {
        Finding::new(Phase::Hygiene, kind, severity, Some(name), field)
    };
    let described = |value: &Value| {
        value
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|d| !d.trim().is_empty())
    };
    if !described(tool) {
        add(new(Kind::NoDescription, Severity::Major, None)
            .title(format!("`{name}` has no description"))
            .fix("Describe what the tool does, what it returns and when to use it: a model picks tools by their descriptions."));
    }
    if !tool.get("annotations").is_some_and(Value::is_object) {
        add(new(Kind::NoAnnotations, Severity::Minor, None)
            .title(format!("`{name}` declares no annotations"))
            .fix("Add `annotations` with readOnlyHint, destructiveHint, idempotentHint and openWorldHint: clients use them to decide what to retry and what to confirm with the user."));
    }
    for (key, what) in [("inputSchema", "input"), ("outputSchema", "output")] {
        let Some(root) = tool.get(key) else {
            if key == "inputSchema" {
                add(new(Kind::NotAnObjectSchema, Severity::Critical, None)
                    .title(format!("`{name}` has no inputSchema"))
                    .fix("Declare `inputSchema` (MCP requires it): `{\"type\": \"object\", \"properties\": {…}}`, empty properties for a tool without arguments."));
            }
            continue;
        };
        let mut walk = Walk::default();
        if key == "inputSchema" {
            walk.object(root, root, "", 0);
        }
        // A reference nothing answers also stops the schema compiling: it is named as that, below.
        if let Err(e) = jsonschema::validator_for(root)
            && walk.unresolved.is_empty()
        {
            add(new(Kind::SchemaNotJsonSchema, Severity::Critical, None)
                .title(format!(
                    "the {what} schema of `{name}` is not JSON Schema: {e}"
                ))
                .fix(format!(
                    "Fix the {what} schema so that it compiles as JSON Schema (2020-12): {e}."
                )));
            continue;
        }
        if root.get("type").and_then(Value::as_str) != Some("object") {
            add(new(Kind::NotAnObjectSchema, Severity::Major, None)
                .title(format!("the {what} schema of `{name}` is not `\"type\": \"object\"`"))
                .fix(format!("Make the {what} schema's root `{{\"type\": \"object\", …}}`: MCP requires it, and OpenAI and Gemini refuse any other root.")));
        }
        let union: Vec<&str> = ["anyOf", "oneOf", "allOf"]
            .into_iter()
            .filter(|k| root.get(*k).is_some())
            .collect();
        if !union.is_empty() {
            add(new(Kind::RootUnion, Severity::Major, None)
                .title(format!("the {what} schema of `{name}` has {} at its root", union.join(" and ")))
                .fix("Put the alternatives inside a property: OpenAI's strict mode refuses `anyOf` at the root, and Gemini every union there."));
        }
        if key == "outputSchema" {
            continue;
        }
        for (field, reference) in &walk.unresolved {
            add(new(Kind::UnresolvedRef, Severity::Major, Some(field))
                .title(format!("`{name}`.{field} refers to `{reference}`, which nothing in the schema answers"))
                .fix(format!("Inline the definition of `{field}` or put it under `$defs` in the same schema: strict clients resolve no remote or missing references.")));
        }
        for field in &walk.untyped {
            add(new(Kind::UntypedProperty, Severity::Major, Some(field))
                .title(format!("`{name}`.{field} declares no type"))
                .fix(format!("Give `{field}` a `type` (or `enum`/`anyOf` of typed members): OpenAI's strict mode and Gemini refuse a tool whose property has none.")));
        }
        for (field, keywords) in &walk.unsupported {
            add(new(Kind::UnsupportedKeyword, Severity::Minor, Some(field))
                .title(format!("`{name}`.{field} uses {}", keywords.join(", ")))
                .fix(format!("Express `{field}` without {}: OpenAI's strict mode and Gemini accept `anyOf` but none of these.", keywords.join(", "))));
        }
        if !walk.undescribed.is_empty() {
            add(new(Kind::PropertyWithoutDescription, Severity::Minor, None)
                .title(format!("`{name}` has properties without a description: {}", walk.undescribed.join(", ")))
                .fix("Describe each property (what it means, its unit, its range): the model fills arguments from these descriptions."));
        }
    }
    found
}

/// What a walk of an input schema's properties saw.
#[derive(Default)]
struct Walk {
    untyped: Vec<String>,
    unresolved: Vec<(String, String)>,
    unsupported: Vec<(String, Vec<&'static str>)>,
    undescribed: Vec<String>,
}

impl Walk {
    /// The members of the object schema `schema` at `path` ("" at the root).
    fn object(&mut self, root: &Value, schema: &Value, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let (properties, _) = schema::properties(root, schema);
        for (name, member) in properties {
            let field = if path.is_empty() {
                name.to_owned()
            } else {
                format!("{path}.{name}")
            };
            self.member(root, member, field, depth + 1);
        }
    }

    fn member(&mut self, root: &Value, member: &Value, field: String, depth: usize) {
        let Some(resolved) = schema::resolve(root, member) else {
            let reference = member.get("$ref").and_then(Value::as_str).unwrap_or("?");
            self.unresolved.push((field, reference.to_owned()));
            return;
        };
        // An array's items are described by the array.
        let described =
            resolved.get("description").is_some() || member.get("description").is_some();
        if !described && !field.ends_with("[]") {
            self.undescribed.push(field.clone());
        }
        let keywords: Vec<&'static str> = UNSUPPORTED
            .iter()
            .copied()
            .filter(|k| resolved.get(*k).is_some())
            .collect();
        if !keywords.is_empty() {
            self.unsupported.push((field.clone(), keywords));
        }
        let kinds = schema::types(root, resolved);
        if kinds.is_empty() {
            self.untyped.push(field.clone());
            return;
        }
        if kinds.iter().any(|k| k == "object") {
            self.object(root, resolved, &field, depth);
        }
        if kinds.iter().any(|k| k == "array")
            && let Some(items) = resolved.get("items").filter(|i| i.is_object())
        {
            self.member(root, items, format!("{field}[]"), depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(tool: Value) -> Vec<(&'static str, Option<String>)> {
        check(&tool, "")
            .into_iter()
            .map(|f| (f.kind.name(), f.field))
            .collect()
    }

    #[test]
    fn a_clean_tool_has_no_finding() {
        let tool = json!({"name": "t", "description": "Does t.", "annotations": {"readOnlyHint": true},
            "inputSchema": {"type": "object", "properties": {
                "level": {"type": "integer", "description": "Level."},
                "mode": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Mode."},
                "items": {"type": "array", "description": "Items.",
                    "items": {"type": "object", "properties": {"a": {"type": "string", "description": "A."}}}}}}});
        assert_eq!(kinds(tool), vec![]);
    }

    #[test]
    fn each_strict_client_problem_is_named_with_its_field() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "anyOf": [{"required": []}], "properties": {
            "rate": {"description": "no type"},
            "filter": {"type": "object", "description": "F.", "properties": {
                "unit": {"description": "no type either"}}},
            "ref": {"$ref": "#/$defs/Missing", "description": "R."},
            "choice": {"type": "string", "allOf": [], "description": "C."},
            "bare": {"type": "string"}}}});
        assert_eq!(
            kinds(tool),
            vec![
                ("no-description", None),
                ("no-annotations", None),
                ("root-union", None),
                ("unresolved-ref", Some("ref".to_owned())),
                ("untyped-property", Some("rate".to_owned())),
                ("untyped-property", Some("filter.unit".to_owned())),
                ("unsupported-keyword", Some("choice".to_owned())),
                ("property-without-description", None),
            ]
        );
    }

    #[test]
    fn a_schema_that_is_not_json_schema_is_critical() {
        let tool = json!({"name": "t", "description": "T.", "annotations": {},
            "inputSchema": {"type": "object", "properties": {"a": {"type": 12}}}});
        assert_eq!(kinds(tool), vec![("schema-not-json-schema", None)]);
    }
}
