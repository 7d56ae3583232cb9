//! What "as the page shows" means. A JSON value has the shape of the one shown when every key shown is there
//! with a value of the same shape, every item shown is there (more may follow), and strings, numbers,
//! booleans and null are of the same type; it has the values shown when, besides, every value shown is the
//! same, arrays as long, and a string with `…` in it is the text around the `…` (`…` standing for any text).
//! A printed line matches a shown one when the shown line, with its numbers standing for any number and `…`
//! for any text, is in it.

use serde_json::Value;

/// Where `actual` is not shaped as `shown`, one message each.
pub fn differences(shown: &Value, actual: &Value) -> Vec<String> {
    let mut found = Vec::new();
    compare(shown, actual, "", false, &mut found);
    found
}

/// Where `actual` does not have the values `shown` shows, one message each.
pub fn value_differences(shown: &Value, actual: &Value) -> Vec<String> {
    let mut found = Vec::new();
    compare(shown, actual, "", true, &mut found);
    found
}

fn compare(shown: &Value, actual: &Value, path: &str, values: bool, found: &mut Vec<String>) {
    let at = if path.is_empty() { "the answer" } else { path };
    match (shown, actual) {
        (Value::Object(shown), Value::Object(actual)) => {
            for (key, value) in shown {
                let path = format!("{path}.{key}");
                match actual.get(key) {
                    Some(got) => compare(value, got, &path, values, found),
                    None => found.push(format!("{path} is missing")),
                }
            }
        }
        (Value::Array(shown), Value::Array(actual)) => {
            if actual.len() < shown.len() || values && actual.len() != shown.len() {
                found.push(format!(
                    "{at} has {} items, the page shows {}",
                    actual.len(),
                    shown.len()
                ));
            }
            for (index, (value, got)) in shown.iter().zip(actual).enumerate() {
                compare(value, got, &format!("{path}[{index}]"), values, found);
            }
        }
        (Value::String(shown), Value::String(got)) => {
            if values && !text_matches(shown, got) {
                found.push(format!("{at} is {got:?}, the page shows {shown:?}"));
            }
        }
        (Value::Number(shown), Value::Number(got)) => {
            if values && shown.as_f64() != got.as_f64() {
                found.push(format!("{at} is {got}, the page shows {shown}"));
            }
        }
        (Value::Bool(shown), Value::Bool(got)) => {
            if values && shown != got {
                found.push(format!("{at} is {got}, the page shows {shown}"));
            }
        }
        (Value::Null, Value::Null) => {}
        (shown, actual) => found.push(format!(
            "{at} is {}, the page shows {}",
            kind(actual),
            kind(shown)
        )),
    }
}

/// Whether `text` is `shown`, a `…` in `shown` standing for any text.
fn text_matches(shown: &str, text: &str) -> bool {
    let parts: Vec<&str> = shown.split('…').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return shown == text;
    };
    if parts.len() == 1 {
        return shown == text;
    }
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether `printed` holds the line shown as `shown`.
pub fn line_matches(shown: &str, printed: &str) -> bool {
    let printed = normalise(printed);
    let mut rest = printed.as_str();
    for part in shown.split('…').map(normalise) {
        let part = part.trim();
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Numbers as `#` (a run of digits with its decimal part), runs of spaces as one.
fn normalise(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == '.')
            {
                chars.next();
            }
            out.push('#');
        } else if c.is_whitespace() {
            while chars.peek().is_some_and(|n| n.is_whitespace()) {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes() {
        let shown = json!({"a": 1, "b": ["x"], "c": {"d": null}});
        assert!(
            differences(
                &shown,
                &json!({"a": 2.5, "b": ["y", "z"], "c": {"d": null}, "e": 0})
            )
            .is_empty()
        );
        assert_eq!(
            differences(&shown, &json!({"a": "1", "b": [], "c": {}})),
            [
                ".a is a string, the page shows a number",
                ".b has 0 items, the page shows 1",
                ".c.d is missing"
            ]
        );
    }

    #[test]
    fn values() {
        let shown = json!({"text": "{\"id\":7,…}", "n": 0.5, "tags": ["a"]});
        assert!(
            value_differences(
                &shown,
                &json!({"text": "{\"id\":7,\"name\":\"x\"}", "n": 0.5, "tags": ["a"], "more": 1})
            )
            .is_empty()
        );
        assert_eq!(
            value_differences(
                &shown,
                &json!({"text": "{\"id\":8}", "n": 0.25, "tags": ["a", "b"]})
            ),
            [
                ".text is \"{\\\"id\\\":8}\", the page shows \"{\\\"id\\\":7,…}\"",
                ".n is 0.25, the page shows 0.5",
                ".tags has 2 items, the page shows 1"
            ]
        );
    }

    #[test]
    fn lines() {
        assert!(line_matches(
            "fault: stopped; conns 0 open / 1 total | up 79 B",
            "fault: stopped; conns 0 open / 0 total | up 0 B | down 0 B"
        ));
        assert!(line_matches(
            "INFO … fault agent tool: serving MCP … at http://127.0.0.1:8000/mcp",
            "2026-11-27T11:02:56Z  INFO fault::serve::http: fault agent tool: serving MCP over Streamable HTTP at http://127.0.0.1:42643/mcp url=x"
        ));
        assert!(!line_matches(
            "fault: proxying",
            "error: unexpected argument"
        ));
    }
}
